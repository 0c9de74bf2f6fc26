#include "sched/flow_match_euler_scheduler.h"

namespace omni::sched {

at::Tensor FlowMatchEulerScheduler::step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) {
  const int64_t i = begin_step(model_output, timestep, sample);
  // dt is the difference of the two float32 sigmas, taken in float32 as the reference's 0-d tensors do.
  const float dt = schedule_.sigmas[i + 1] - schedule_.sigmas[i];
  // The reference upcasts the sample to float32 and adds dt * v (v keeps its dtype in the product).
  const at::Tensor x = sample.to(at::kFloat);
  at::Tensor prev = x.add(model_output.mul(static_cast<double>(dt)));
  ++step_index_;
  return prev.to(sample.scalar_type());
}

}  // namespace omni::sched
