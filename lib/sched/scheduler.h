// The sampling schedulers: diffusers' UniPCMultistepScheduler in its flow-prediction configuration (what the
// Wan2.2 checkpoints ship in scheduler/scheduler_config.json) and flow-match Euler (--sample-solver euler) on
// the same shifted sigmas.
//
// Both mirror diffusers' arithmetic: the schedule is computed in float64 (numpy) and stored as float32 sigmas
// and int64 timesteps; every per-step scalar (alpha, sigma, lambda, h, B(h), rho) is a float32 value, as the
// reference's 0-d float32 tensors are; tensor updates are separate elementwise ops in the reference's order.
// Scalars live on the host; tensors follow the sample's device.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sched/solver.h"

namespace omni::sched {

// The keys of scheduler_config.json that matter for the flow-sigma path, validated.
struct FlowSchedulerConfig {
  int num_train_timesteps = 1000;
  double flow_shift = 1.0;
  bool final_sigma_zero = true;  // final_sigmas_type "zero" (else "sigma_min": repeat the last sigma)
  // UniPC only:
  int solver_order = 2;  // 1 or 2
  bool bh2 = true;       // solver_type "bh2" (B(h) = expm1(-h)) or "bh1" (B(h) = -h)
  bool lower_order_final = true;
  std::vector<int64_t> disable_corrector;  // step indices whose following corrector is skipped
  // The sigma grid of Wan2.2's own FlowUniPCMultistepScheduler (constructed with shift 1, shifted in
  // set_timesteps) instead of diffusers': the reference for the models diffusers does not run (Wan2.2-S2V).
  bool wan_grid = false;
};

// Reads and validates `config` (the scheduler_config.json object) for `solver` ("unipc" or "euler").
// Unsupported values are input errors naming `source` and the key; a bad solver name or flow shift override
// is a usage error naming the flag.
FlowSchedulerConfig parse_scheduler_config(const nlohmann::json& config, Solver solver,
                                           std::optional<double> flow_shift_override,
                                           const std::string& source = "scheduler_config.json");

// The flow-sigma schedule of set_timesteps (use_flow_sigmas): u = linspace(1, 1/T, n+1)[:-1] (float64),
// sigma = shift*u / (1 + (shift-1)*u), sigma[0] moved off 1 by 1e-6 (so lambda stays finite),
// timesteps = int64(sigma * T) (truncation), sigmas = float32([sigma..., 0 or sigma[-1]]).
// `wan_grid`: Wan2.2's fm_solvers_unipc.py instead: u = linspace(sigma_max, 0, n+1)[:-1] with sigma_max its
// float32 1 - 1/T (0.9990000128746033 for T = 1000), no nudge; the rest as above.
struct FlowSchedule {
  std::vector<int64_t> timesteps;  // [n]
  std::vector<float> sigmas;       // [n + 1]
};
FlowSchedule flow_sigma_schedule(int num_inference_steps, double flow_shift, int num_train_timesteps,
                                 bool final_sigma_zero, bool wan_grid = false);

class Scheduler {
 public:
  explicit Scheduler(FlowSchedulerConfig config) : config_(std::move(config)) {}
  virtual ~Scheduler() = default;
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  virtual const char* name() const = 0;  // "unipc" / "euler"

  // Computes the schedule for `num_inference_steps` steps and resets the sampling state. The timestep and
  // sigma tensors are placed on `device`; the arithmetic uses the host copies.
  void set_timesteps(int num_inference_steps, const at::Device& device = at::kCPU);
  const at::Tensor& timesteps() const { return timesteps_; }  // int64 [n]
  const at::Tensor& sigmas() const { return sigmas_; }        // float32 [n + 1]
  const std::vector<int64_t>& timestep_values() const { return schedule_.timesteps; }
  const std::vector<float>& sigma_values() const { return schedule_.sigmas; }
  int num_inference_steps() const { return static_cast<int>(schedule_.timesteps.size()); }
  int step_index() const { return static_cast<int>(step_index_); }  // -1 before the first step
  const FlowSchedulerConfig& config() const { return config_; }

  // One sampling step: `model_output` is the model's velocity at `timestep` for `sample` (same shape and
  // device; any floating dtype); returns the sample at the next sigma in the sample's dtype. The step index
  // is taken from `timestep` on the first call (diffusers' index_for_timestep) and then counts up.
  virtual at::Tensor step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) = 0;

  // UniPC's add_noise (flow-match Euler's scale_noise computes the same): `original` moved toward `noise` to
  // the sigma of `timestep` (found as step() finds its first one), (1 - sigma) * original + sigma * noise in
  // float32. Video-to-video's starting latents.
  at::Tensor add_noise(const at::Tensor& original, const at::Tensor& noise, int64_t timestep) const;

  // Forgets the step index and any multistep history; the schedule stays.
  virtual void reset() { step_index_ = -1; }

 protected:
  // diffusers' index_for_timestep on this schedule.
  int64_t index_for_timestep(int64_t timestep) const;
  // Checks the arguments and the state, sets the step index on the first call; returns the index.
  int64_t begin_step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample);

  FlowSchedulerConfig config_;
  FlowSchedule schedule_;
  at::Tensor timesteps_;
  at::Tensor sigmas_;
  int64_t step_index_ = -1;
};

// Builds the scheduler for `solver` (--sample-solver) from the scheduler_config.json object; a given
// `flow_shift_override` (--flow-shift) replaces the config's flow_shift.
std::unique_ptr<Scheduler> make_scheduler(const nlohmann::json& config, Solver solver,
                                          std::optional<double> flow_shift_override,
                                          const std::string& source = "scheduler_config.json");

// Wan2.2's own sampler for the models that ship no scheduler_config.json (Wan2.2-S2V's original folder):
// FlowUniPCMultistepScheduler(num_train_timesteps=1000, shift=1) with set_timesteps(n, shift=flow_shift): order 2,
// bh2, predict_x0, lower_order_final, final sigma zero, on Wan's sigma grid (wan_grid). Euler takes the same grid.
std::unique_ptr<Scheduler> make_wan_scheduler(Solver solver, double flow_shift);

}  // namespace omni::sched
