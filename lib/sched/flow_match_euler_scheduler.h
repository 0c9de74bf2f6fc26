// Flow-match Euler (--sample-solver euler): x_next = x + (sigma_next - sigma) * v on the same shifted flow
// sigmas as UniPC (diffusers' FlowMatchEulerDiscreteScheduler step rule).
#pragma once

#include "sched/scheduler.h"

namespace omni::sched {

class FlowMatchEulerScheduler : public Scheduler {
 public:
  explicit FlowMatchEulerScheduler(FlowSchedulerConfig config) : Scheduler(std::move(config)) {}
  const char* name() const override { return "euler"; }
  at::Tensor step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) override;
};

}  // namespace omni::sched
