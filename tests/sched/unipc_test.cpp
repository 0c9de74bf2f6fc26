// UniPCMultistepScheduler against diffusers' outputs: the 20 scheduler fixture runs (timesteps, sigmas and
// every sample of a full sampling run) and the schedules and scheduler steps of the three pipeline cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace omni::sched {
namespace {

using testing::max_rel_err;
using testing::reference_dir;
using testing::scheduler_config;

constexpr double kTol = 1e-5;

TEST(UniPC, SchedulerFixtureRuns) {
  const nlohmann::json cases = io::read_json(reference_dir() + "/scheduler/unipc.json");
  const io::Checkpoint fx = io::Checkpoint::open(reference_dir() + "/scheduler/unipc.safetensors");
  const nlohmann::json config = scheduler_config("t2v-a14b-tiny");
  ASSERT_EQ(cases["cases"].size(), 20u);

  double worst_sigma = 0, worst_sample = 0;
  for (const auto& c : cases["cases"]) {
    const std::string key = c["key"].get<std::string>();
    const double shift = c["flow_shift"].get<double>();
    const int n = c["num_inference_steps"].get<int>();
    SCOPED_TRACE(key);
    auto sched = make_scheduler(config, sched::Solver::kUniPC, shift);
    sched->set_timesteps(n);

    // Timesteps exactly (stored as float32 integers in the fixture).
    const at::Tensor ref_t = fx.read(key + ".timesteps", at::kDouble);
    ASSERT_EQ(sched->timesteps().numel(), n);
    ASSERT_EQ(sched->timesteps().scalar_type(), at::kLong);
    ASSERT_EQ(ref_t.numel(), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sched->timestep_values()[i], static_cast<int64_t>(ref_t[i].item<double>())) << "timestep " << i;
      EXPECT_EQ(sched->timesteps()[i].item<int64_t>(), sched->timestep_values()[i]);
    }
    const at::Tensor ref_s = fx.read(key + ".sigmas", at::kFloat);
    ASSERT_EQ(sched->sigmas().scalar_type(), at::kFloat);
    const double sigma_err = max_rel_err(sched->sigmas(), ref_s);
    EXPECT_LE(sigma_err, kTol);
    worst_sigma = std::max(worst_sigma, sigma_err);

    // A full run fed the reference's model outputs; our own samples carry forward.
    at::Tensor x = fx.read(key + ".x0", at::kFloat);
    double case_worst = 0;
    for (int i = 0; i < n; ++i) {
      const at::Tensor v = fx.read(testing::step_key(key, "model_output", i), at::kFloat);
      x = sched->step(v, sched->timestep_values()[i], x);
      ASSERT_EQ(x.scalar_type(), at::kFloat);
      const double err = max_rel_err(x, fx.read(testing::step_key(key, "sample", i), at::kFloat));
      EXPECT_LE(err, kTol) << "sample " << i;
      case_worst = std::max(case_worst, err);
    }
    worst_sample = std::max(worst_sample, case_worst);
    std::printf("  %-18s steps %2d: max rel error sigmas %.3g, samples %.3g\n", key.c_str(), n, sigma_err, case_worst);
  }
  std::printf("UniPC fixture: max rel error sigmas %.3g, samples %.3g (tolerance %.0e)\n", worst_sigma, worst_sample,
              kTol);
}

// The schedule each pipeline case used (flow_shift from the model's scheduler config, which case.json repeats)
// and the latents after every scheduler step, from the recorded transformer outputs combined by CFG.
TEST(UniPC, PipelineCases) {
  for (const std::string name : {"t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"}) {
    SCOPED_TRACE(name);
    const std::string dir = reference_dir() + "/" + name;
    const nlohmann::json cs = io::read_json(dir + "/case.json");
    const nlohmann::json config = scheduler_config(name);
    ASSERT_DOUBLE_EQ(config["flow_shift"].get<double>(), cs["flow_shift"].get<double>());
    const io::Checkpoint fx = io::Checkpoint::open(dir + "/expected.safetensors");
    const int n = cs["num_inference_steps"].get<int>();

    auto sched = make_scheduler(config, sched::Solver::kUniPC, std::nullopt);
    sched->set_timesteps(n);
    const at::Tensor ref_t = fx.read("scheduler.timesteps", at::kDouble);
    ASSERT_EQ(ref_t.numel(), n);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sched->timestep_values()[i], static_cast<int64_t>(ref_t[i].item<double>())) << "timestep " << i;
      EXPECT_EQ(sched->timestep_values()[i], static_cast<int64_t>(cs["step_log"][i]["timestep"].get<double>()));
    }
    const double sigma_err = max_rel_err(sched->sigmas(), fx.read("scheduler.sigmas", at::kFloat));
    EXPECT_LE(sigma_err, kTol);

    // Step k consumes calls 2k (cond) and 2k+1 (uncond); the guidance scale follows the expert of the call.
    const double g1 = cs["guidance_scale"].get<double>();
    const double g2 = cs["guidance_scale_2"].is_null() ? g1 : cs["guidance_scale_2"].get<double>();
    at::Tensor x = fx.read("init_latents", at::kFloat);
    double worst = 0;
    for (int k = 0; k < n; ++k) {
      char cond[8], uncond[8], step[8];
      std::snprintf(cond, sizeof(cond), "call%02d", 2 * k);
      std::snprintf(uncond, sizeof(uncond), "call%02d", 2 * k + 1);
      std::snprintf(step, sizeof(step), "step%02d", k);
      const bool high = cs["transformer_calls"][2 * k]["model"].get<std::string>() == "transformer";
      const at::Tensor c = fx.read(std::string(cond) + ".out", at::kFloat);
      const at::Tensor u = fx.read(std::string(uncond) + ".out", at::kFloat);
      const at::Tensor v = u.add(c.sub(u).mul(high ? g1 : g2));  // uncond + g * (cond - uncond)
      x = sched->step(v, sched->timestep_values()[k], x);
      const double err = max_rel_err(x, fx.read(std::string(step) + ".latents", at::kFloat));
      EXPECT_LE(err, kTol) << step;
      worst = std::max(worst, err);
    }
    std::printf("  %-14s steps %d: max rel error sigmas %.3g, step latents %.3g\n", name.c_str(), n, sigma_err, worst);
  }
}

// The first step() takes its index from the timestep (diffusers' index_for_timestep); reset() starts over and
// gives the same run again.
TEST(UniPC, StepIndexAndReset) {
  const io::Checkpoint fx = io::Checkpoint::open(reference_dir() + "/scheduler/unipc.safetensors");
  const std::string key = "unipc.shift5.n10";
  auto sched = make_scheduler(scheduler_config("t2v-a14b-tiny"), sched::Solver::kUniPC, 5.0);
  sched->set_timesteps(10);
  const at::Tensor x0 = fx.read(key + ".x0", at::kFloat);
  const at::Tensor v0 = fx.read(key + ".model_output00", at::kFloat);
  const at::Tensor v1 = fx.read(key + ".model_output01", at::kFloat);

  const at::Tensor first_a = sched->step(v0, sched->timestep_values()[0], x0);
  const at::Tensor second_a = sched->step(v1, sched->timestep_values()[1], first_a);
  sched->reset();
  EXPECT_EQ(sched->step_index(), -1);
  const at::Tensor first_b = sched->step(v0, sched->timestep_values()[0], x0);
  const at::Tensor second_b = sched->step(v1, sched->timestep_values()[1], first_b);
  EXPECT_EQ(sched->step_index(), 2);
  EXPECT_TRUE(at::equal(second_a, second_b)) << "reset() must forget the history";
  EXPECT_LE(max_rel_err(second_b, fx.read(key + ".sample01", at::kFloat)), kTol);

  // Entering at the third timestep starts at index 2; a timestep not in the schedule means the last step.
  sched->reset();
  (void)sched->step(v0, sched->timestep_values()[2], x0);
  EXPECT_EQ(sched->step_index(), 3);
  sched->reset();
  const at::Tensor last = sched->step(v0, 12345, x0);
  EXPECT_EQ(sched->step_index(), 10);
  // The last step lands on sigma 0 and returns the data prediction x - sigma * v.
  const float s = sched->sigma_values()[9];
  EXPECT_LE(max_rel_err(last, x0.sub(v0.mul(static_cast<double>(s)))), 1e-7);
  EXPECT_THROW(sched->step(v0, 0, x0), Error);  // past the end
}

// Wan2.2's own FlowUniPCMultistepScheduler (S2V's sampler: no diffusers pipeline exists), recorded from Wan2.2 @
// 42bf4cfa's source by tools/reference/s2v/record_s2v.py (tests/data/reference/s2v-scheduler): its grid
// linspace(float32 0.999, 0, n + 1)[:-1] shifted by 3 for 4 and 40 steps, and 4 steps fed recorded velocities.
TEST(UniPC, WanGridAsWan) {
  const io::Checkpoint rec = io::Checkpoint::open(reference_dir() + "/s2v-scheduler/scheduler.safetensors");
  for (int n : {4, 40}) {
    SCOPED_TRACE(n);
    auto sched = make_wan_scheduler(Solver::kUniPC, 3.0);
    sched->set_timesteps(n);
    const at::Tensor t = rec.read("timesteps.n" + std::to_string(n), at::kLong);
    const at::Tensor sigma = rec.read("sigmas.n" + std::to_string(n), at::kFloat);
    ASSERT_EQ(t.numel(), n);
    EXPECT_TRUE(sched->timesteps().equal(t));
    EXPECT_TRUE(sched->sigmas().equal(sigma)) << "float64 arithmetic, then float32: equal";
  }
  // diffusers' grid is another: 999, 908, 772, 545 for 4 steps at shift 3 (Wan's: 999, 899, 749, 499).
  auto diffusers_grid = make_scheduler(scheduler_config("t2v-a14b-tiny"), Solver::kUniPC, 3.0);
  diffusers_grid->set_timesteps(4);
  EXPECT_FALSE(diffusers_grid->timesteps().equal(rec.read("timesteps.n4", at::kLong)));
  EXPECT_EQ(rec.read("timesteps.n4", at::kLong)[1].item<int64_t>(), 899);

  auto sched = make_wan_scheduler(Solver::kUniPC, 3.0);
  sched->set_timesteps(4);
  at::Tensor x = rec.read("unipc4.sample0", at::kFloat);
  for (int k = 0; k < 4; ++k) {
    x = sched->step(rec.read("unipc4.model_out." + std::to_string(k), at::kFloat), sched->timestep_values()[k], x);
    const double err = max_rel_err(x, rec.read("unipc4.after." + std::to_string(k), at::kFloat));
    std::printf("Wan UniPC step %d: max relative err %.3g\n", k, err);
    EXPECT_LE(err, kTol) << "step " << k;
  }
}

}  // namespace
}  // namespace omni::sched
