// Flow-match Euler against an independent float64 evaluation of x_next = x + (sigma_next - sigma) * v on the
// scheduler fixture's sigmas and model outputs; its schedule is UniPC's (diffusers' shifted flow sigmas).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "sched/scheduler.h"
#include "sched_test_util.h"

namespace omni::sched {
namespace {

using testing::max_rel_err;
using testing::reference_dir;
using testing::scheduler_config;

TEST(FlowMatchEuler, FormulaOnFixtureInputs) {
  const nlohmann::json cases = io::read_json(reference_dir() + "/scheduler/unipc.json");
  const io::Checkpoint fx = io::Checkpoint::open(reference_dir() + "/scheduler/unipc.safetensors");
  const nlohmann::json config = scheduler_config("t2v-a14b-tiny");
  double worst_sigma = 0, worst = 0;
  for (const auto& c : cases["cases"]) {
    const std::string key = c["key"].get<std::string>();
    const int n = c["num_inference_steps"].get<int>();
    SCOPED_TRACE(key);
    auto sched = make_scheduler(config, sched::Solver::kEuler, c["flow_shift"].get<double>());
    EXPECT_STREQ(sched->name(), "euler");
    sched->set_timesteps(n);
    // The same schedule as the reference UniPC's.
    const at::Tensor ref_t = fx.read(key + ".timesteps", at::kDouble);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(sched->timestep_values()[i], static_cast<int64_t>(ref_t[i].item<double>()));
    }
    const at::Tensor ref_s = fx.read(key + ".sigmas", at::kDouble);  // [n + 1]
    worst_sigma = std::max(worst_sigma, max_rel_err(sched->sigmas(), ref_s));

    at::Tensor x = fx.read(key + ".x0", at::kFloat);
    at::Tensor expect = x.to(at::kDouble);
    for (int i = 0; i < n; ++i) {
      const at::Tensor v = fx.read(testing::step_key(key, "model_output", i), at::kFloat);
      x = sched->step(v, sched->timestep_values()[i], x);
      ASSERT_EQ(x.scalar_type(), at::kFloat);
      const double dt = ref_s[i + 1].item<double>() - ref_s[i].item<double>();
      expect = expect + v.to(at::kDouble) * dt;
      const double err = max_rel_err(x, expect);
      EXPECT_LE(err, 1e-5) << "step " << i;
      worst = std::max(worst, err);
    }
  }
  EXPECT_LE(worst_sigma, 1e-7);
  std::printf("Euler: max rel error sigmas %.3g, samples vs float64 formula %.3g\n", worst_sigma, worst);
}

}  // namespace
}  // namespace omni::sched
