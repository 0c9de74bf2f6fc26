// Config validation (unsupported values name their key) and an analytic check of every solver variant: with
// the exact velocity of a single data point, each step must land on the straight flow path
// x(sigma) = (1 - sigma) d + sigma n and the run must end on d.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <string>

#include "core/error.h"
#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace omni::sched {
namespace {

using testing::expect_error;
using testing::max_rel_err;
using testing::scheduler_config;
constexpr omni::sched::Solver kUniPC = omni::sched::Solver::kUniPC;
constexpr omni::sched::Solver kEuler = omni::sched::Solver::kEuler;

nlohmann::json with(const std::string& key, const nlohmann::json& value) {
  nlohmann::json c = scheduler_config("t2v-a14b-tiny");
  c[key] = value;
  return c;
}

TEST(SchedulerConfig, ReadsTheCheckpointConfig) {
  const FlowSchedulerConfig c = parse_scheduler_config(scheduler_config("t2v-a14b-tiny"), kUniPC, std::nullopt);
  EXPECT_EQ(c.num_train_timesteps, 1000);
  EXPECT_DOUBLE_EQ(c.flow_shift, 3.0);
  EXPECT_EQ(c.solver_order, 2);
  EXPECT_TRUE(c.bh2);
  EXPECT_TRUE(c.lower_order_final);
  EXPECT_TRUE(c.final_sigma_zero);
  EXPECT_TRUE(c.disable_corrector.empty());
  EXPECT_DOUBLE_EQ(parse_scheduler_config(scheduler_config("t2v-a14b-tiny"), kUniPC, 7.5).flow_shift, 7.5);
  EXPECT_FALSE(parse_scheduler_config(with("solver_type", "bh1"), kUniPC, std::nullopt).bh2);
}

TEST(SchedulerConfig, RejectsUnsupportedValues) {
  const auto unipc = [](const nlohmann::json& c) { return [c] { (void)make_scheduler(c, kUniPC, std::nullopt); }; };
  expect_error(unipc(with("solver_type", "bh3")), ExitCode::kInput, {"scheduler_config.json", "solver_type", "bh3"});
  expect_error(unipc(with("prediction_type", "epsilon")), ExitCode::kInput, {"prediction_type", "epsilon"});
  expect_error(unipc(with("use_flow_sigmas", false)), ExitCode::kInput, {"use_flow_sigmas"});
  expect_error(unipc(with("use_karras_sigmas", true)), ExitCode::kInput, {"use_karras_sigmas"});
  expect_error(unipc(with("solver_order", 3)), ExitCode::kInput, {"solver_order", "3"});
  expect_error(unipc(with("predict_x0", false)), ExitCode::kInput, {"predict_x0"});
  expect_error(unipc(with("thresholding", true)), ExitCode::kInput, {"thresholding"});
  expect_error(unipc(with("final_sigmas_type", "sigma_max")), ExitCode::kInput, {"final_sigmas_type"});
  expect_error(unipc(with("flow_shift", "three")), ExitCode::kInput, {"flow_shift"});
  expect_error(unipc(with("flow_shift", -1.0)), ExitCode::kInput, {"flow_shift"});
  expect_error(unipc(with("_class_name", "DDIMScheduler")), ExitCode::kInput, {"_class_name", "DDIMScheduler"});
  expect_error(unipc(with("solver_p", "x")), ExitCode::kInput, {"solver_p"});
  expect_error(unipc(with("lower_order_final", false)), ExitCode::kInput, {"lower_order_final"});
  // Keys diffusers reads that would move the sigmas: a dynamic shift (the Wan pipelines pass no mu: diffusers
  // raises) and a terminal stretch.
  expect_error(unipc(with("use_dynamic_shifting", true)), ExitCode::kInput, {"use_dynamic_shifting"});
  expect_error(unipc(with("shift_terminal", 0.1)), ExitCode::kInput, {"shift_terminal", "0.1"});
  expect_error(unipc(with("beta_schedule", "cosine")), ExitCode::kInput, {"beta_schedule", "cosine"});
  EXPECT_NO_THROW(unipc(with("shift_terminal", nullptr))());
  EXPECT_NO_THROW(unipc(with("shift_terminal", 0))());  // diffusers tests its truth
  // Known keys that cannot change the flow schedule, and unknown ones (a newer diffusers), leave it as it is.
  nlohmann::json extra = scheduler_config("t2v-a14b-tiny");
  extra["steps_offset"] = 1;
  extra["sigma_min"] = 0.002;
  extra["rescale_betas_zero_snr"] = true;
  extra["added_by_a_newer_release"] = {1, 2};
  extra["_diffusers_version"] = "0.35.0.dev0";
  const FlowSchedule a =
      flow_sigma_schedule(7, parse_scheduler_config(extra, kUniPC, std::nullopt).flow_shift, 1000, true);
  const FlowSchedule b = flow_sigma_schedule(
      7, parse_scheduler_config(scheduler_config("t2v-a14b-tiny"), kUniPC, std::nullopt).flow_shift, 1000, true);
  EXPECT_EQ(a.timesteps, b.timesteps);
  EXPECT_EQ(a.sigmas, b.sigmas);
  nlohmann::json missing = scheduler_config("t2v-a14b-tiny");
  missing.erase("prediction_type");  // diffusers' default is epsilon
  expect_error(unipc(missing), ExitCode::kInput, {"prediction_type"});

  const nlohmann::json ok = scheduler_config("t2v-a14b-tiny");
  expect_error([&] { (void)make_scheduler(ok, kUniPC, 0.0); }, ExitCode::kUsage, {"--flow-shift"});
  auto sched = make_scheduler(ok, kUniPC, std::nullopt);
  expect_error([&] { sched->set_timesteps(0); }, ExitCode::kUsage, {"steps"});
  const at::Tensor x = at::zeros({2, 3});
  EXPECT_THROW(sched->step(x, 999, x), Error);  // before set_timesteps
  sched->set_timesteps(4);
  EXPECT_THROW(sched->step(at::zeros({3, 2}), 999, x), Error);  // shape mismatch

  // UniPC-only keys do not concern Euler.
  EXPECT_STREQ(make_scheduler(with("solver_type", "bh3"), kEuler, std::nullopt)->name(), "euler");
}

// Every solver variant on the exact velocity field of one data point d: v(x, sigma) = (x - d) / sigma.
TEST(SchedulerConfig, ExactVelocityStaysOnTheFlowPath) {
  const at::Tensor d = at::randn({1, 4, 2, 3, 5}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor noise = at::randn({1, 4, 2, 3, 5}, at::TensorOptions().dtype(at::kFloat));
  struct Variant {
    omni::sched::Solver solver;
    const char* solver_type;
    int order;
    bool lower_order_final;
    const char* final_type;
  };
  const Variant variants[] = {
      {kUniPC, "bh2", 2, true, "zero"},       {kUniPC, "bh1", 2, true, "zero"}, {kUniPC, "bh2", 1, true, "zero"},
      {kUniPC, "bh2", 2, false, "sigma_min"}, {kEuler, "bh2", 2, true, "zero"}, {kEuler, "bh2", 2, true, "sigma_min"},
  };
  for (const Variant& var : variants) {
    for (int n : {1, 3, 12}) {
      SCOPED_TRACE(std::string((var.solver == omni::sched::Solver::kEuler ? "euler" : "unipc")) + " " +
                   var.solver_type + " order " + std::to_string(var.order) +
                   (var.lower_order_final ? "" : " full-order") + " final " + var.final_type + " n " +
                   std::to_string(n));
      nlohmann::json c = with("solver_type", var.solver_type);
      c["solver_order"] = var.order;
      c["lower_order_final"] = var.lower_order_final;
      c["final_sigmas_type"] = var.final_type;
      auto sched = make_scheduler(c, var.solver, 4.0);
      sched->set_timesteps(n);
      const auto& s = sched->sigma_values();
      at::Tensor x = d.mul(1.0 - s[0]).add(noise.mul(static_cast<double>(s[0])));
      double worst = 0;
      for (int i = 0; i < n; ++i) {
        const at::Tensor v = x.sub(d).div(static_cast<double>(s[i]));
        x = sched->step(v, sched->timestep_values()[i], x);
        const double sn = s[i + 1];
        const at::Tensor on_path = d.mul(1.0 - sn).add(noise.mul(sn));
        worst = std::max(worst, max_rel_err(x, on_path));
      }
      EXPECT_LE(worst, 2e-5);
      if (std::string(var.final_type) == "zero") EXPECT_LE(max_rel_err(x, d), 2e-5);
    }
  }
}

}  // namespace
}  // namespace omni::sched
