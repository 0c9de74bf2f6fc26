// diffusers' UniPCMultistepScheduler (UniPC: a unified predictor-corrector, Zhao et al. 2023) in the
// configuration of the Wan2.2 checkpoints: flow_prediction with use_flow_sigmas, predict_x0 (data prediction),
// B(h) variant bh2 (or bh1), solver_order 1 or 2, lower_order_final, final sigma zero or sigma_min.
//
// With alpha = 1 - sigma and lambda = log(alpha) - log(sigma), each step converts the velocity to a data
// prediction x0 = x - sigma * v; from the second step on a UniC corrector refines the current sample with the
// previous and the current x0, then a UniP predictor moves it to the next sigma. The first step is first order
// (warm-up) and so is the last one under lower_order_final, where sigma = 0 and the result is x0.
#pragma once

#include <vector>

#include "sched/scheduler.h"

namespace omni::sched {

class UniPCMultistepScheduler : public Scheduler {
 public:
  explicit UniPCMultistepScheduler(FlowSchedulerConfig config);
  const char* name() const override { return "unipc"; }
  // Keeps references to `sample` and its data prediction for the next steps (as the reference does): do not
  // modify them in place between steps.
  at::Tensor step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) override;
  void reset() override;

 private:
  // alpha, sigma and lambda of schedule index i, each a float32 value as in the reference.
  struct Point {
    float alpha;
    float sigma;
    float lambda;
  };
  Point point(int64_t i) const;

  // convert_model_output: the data prediction x0 = sample - sigma * v.
  at::Tensor convert_model_output(const at::Tensor& model_output, const at::Tensor& sample) const;
  // multistep_uni_p_bh_update: from `sample` at sigma[k] to sigma[k+1] with the stored x0 history.
  at::Tensor predictor_update(const at::Tensor& sample, int order) const;
  // multistep_uni_c_bh_update: recomputes the sample at sigma[k] from `last_sample` (at sigma[k-1]) using the
  // new data prediction `this_model_output` as well; the history does not yet include it.
  at::Tensor corrector_update(const at::Tensor& this_model_output, const at::Tensor& last_sample, int order) const;

  std::vector<at::Tensor> model_outputs_;  // solver_order data predictions, oldest first (undefined = none yet)
  at::Tensor last_sample_;                 // the sample the previous predictor started from
  int lower_order_nums_ = 0;               // warm-up counter
  int this_order_ = 0;                     // order of the previous predictor (the next corrector's order)
};

}  // namespace omni::sched
