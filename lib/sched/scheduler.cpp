// Config parsing, the shared flow-sigma schedule, the step-index bookkeeping and the factory.
#include "sched/scheduler.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "io/json_file.h"
#include "sched/flow_match_euler_scheduler.h"
#include "sched/unipc_multistep_scheduler.h"

namespace omni::sched {

namespace {

using nlohmann::json;

// Keys whose value must equal the one this implementation supports (diffusers' default in parentheses).
void require_bool(io::ConfigFile& file, const char* key, bool fallback, bool required, const std::string& why) {
  const bool value = file.bool_or(key, fallback);
  OMNI_CHECK_INPUT(value == required, file.source(), ": ", key, " = ", value ? "true" : "false",
                   " is not supported (need ", required ? "true" : "false", ": ", why, ")");
}

}  // namespace

FlowSchedulerConfig parse_scheduler_config(const nlohmann::json& config, Solver solver,
                                           std::optional<double> flow_shift_override, const std::string& source) {
  io::ConfigFile file(config, source, "UniPCMultistepScheduler");
  FlowSchedulerConfig out;

  const std::string cls = file.string_or("_class_name", "UniPCMultistepScheduler");
  OMNI_CHECK_INPUT(cls == "UniPCMultistepScheduler", source, ": _class_name '", cls,
                   "' is not supported (expected 'UniPCMultistepScheduler', the Wan2.2 diffusers layout)");

  // Both solvers integrate the velocity on the flow-sigma schedule; these keys select it (the defaults are
  // diffusers' constructor defaults, so a config missing them is rejected as diffusers would compute
  // something else).
  const std::string prediction = file.string_or("prediction_type", "epsilon");
  OMNI_CHECK_INPUT(prediction == "flow_prediction", source, ": prediction_type '", prediction,
                   "' is not supported (only 'flow_prediction': the Wan models predict the flow velocity)");
  require_bool(file, "use_flow_sigmas", false, true, "the flow-matching sigma schedule");
  // In diffusers these take precedence over use_flow_sigmas.
  require_bool(file, "use_karras_sigmas", false, false, "only flow sigmas are implemented");
  require_bool(file, "use_exponential_sigmas", false, false, "only flow sigmas are implemented");
  require_bool(file, "use_beta_sigmas", false, false, "only flow sigmas are implemented");
  // On the flow schedule these replace the shift by a time shift of a resolution-dependent mu (which the Wan
  // pipelines never pass: diffusers raises) and stretch the sigmas to a terminal value.
  require_bool(file, "use_dynamic_shifting", false, false, "the Wan pipelines pass no mu for a dynamic shift");
  if (const json* v = file.find("shift_terminal")) {
    // diffusers tests its truth: 0 and false are off.
    const bool off = (v->is_number() && v->get<double>() == 0.0) || (v->is_boolean() && !v->get<bool>());
    OMNI_CHECK_INPUT(off, source, ": shift_terminal = ", v->dump(),
                     " is not supported (only null: stretching the flow sigmas to a terminal value is not "
                     "implemented)");
  }
  // diffusers validates the spacing before the flow-sigma branch replaces the timesteps.
  const std::string spacing = file.string_or("timestep_spacing", "linspace");
  OMNI_CHECK_INPUT(spacing == "linspace" || spacing == "leading" || spacing == "trailing", source,
                   ": timestep_spacing '", spacing, "' is not one of 'linspace', 'leading', 'trailing'");
  // The constructor builds betas from these before anything else (and refuses an unknown schedule); the flow
  // branch never uses them, nor the offset of 'leading' timesteps, nor the bounds of the Karras-type schedules.
  const std::string betas = file.string_or("beta_schedule", "linear");
  OMNI_CHECK_INPUT(file.find("trained_betas") != nullptr || betas == "linear" || betas == "scaled_linear" ||
                       betas == "squaredcos_cap_v2",
                   source, ": beta_schedule '", betas,
                   "' is not one of 'linear', 'scaled_linear', 'squaredcos_cap_v2' (diffusers refuses it)");
  file.known({"beta_start", "beta_end", "rescale_betas_zero_snr", "steps_offset", "sigma_min", "sigma_max",
              "time_shift_type", "dynamic_thresholding_ratio", "sample_max_value"});

  const int64_t train_steps = file.int_or("num_train_timesteps", 1000);
  OMNI_CHECK_INPUT(train_steps > 0 && train_steps <= (1 << 24), source,
                   ": num_train_timesteps must be positive, found ", train_steps);
  out.num_train_timesteps = static_cast<int>(train_steps);

  const json* shift = file.value("flow_shift");
  if (flow_shift_override) {
    out.flow_shift = *flow_shift_override;
    OMNI_CHECK_USAGE(std::isfinite(out.flow_shift) && out.flow_shift > 0, "--flow-shift must be positive, got ",
                     out.flow_shift);
  } else if (shift != nullptr) {
    OMNI_CHECK_INPUT(shift->is_number(), source, ": flow_shift must be a number, found ", shift->dump(),
                     " (or pass --flow-shift)");
    out.flow_shift = shift->get<double>();
    OMNI_CHECK_INPUT(std::isfinite(out.flow_shift) && out.flow_shift > 0, source,
                     ": flow_shift must be positive, found ", out.flow_shift);
  }

  const std::string final_type = file.string_or("final_sigmas_type", "zero");
  OMNI_CHECK_INPUT(final_type == "zero" || final_type == "sigma_min", source, ": final_sigmas_type '", final_type,
                   "' is not supported (expected 'zero' or 'sigma_min')");
  out.final_sigma_zero = final_type == "zero";

  if (solver == Solver::kEuler) {  // the rest configures UniPC only
    file.known({"solver_order", "solver_type", "lower_order_final", "solver_p", "disable_corrector", "predict_x0",
                "thresholding"});
    file.warn_unknown();
    return out;
  }
  const int64_t order = file.int_or("solver_order", 2);
  const std::string type = file.string_or("solver_type", "bh2");
  const bool lower_order_final = file.bool_or("lower_order_final", true);
  const json* solver_p = file.value("solver_p");
  const json* disable_corrector = file.find("disable_corrector");
  OMNI_CHECK_INPUT(order == 1 || order == 2, source, ": solver_order ", order,
                   " is not supported (expected 1 or 2; the Wan checkpoints use 2)");
  out.solver_order = static_cast<int>(order);
  // diffusers maps the DPM-Solver names onto bh2.
  const bool is_bh2 = type == "bh2" || type == "midpoint" || type == "heun" || type == "logrho";
  OMNI_CHECK_INPUT(is_bh2 || type == "bh1", source, ": solver_type '", type,
                   "' is not supported (expected 'bh2' or 'bh1')");
  out.bh2 = is_bh2;
  require_bool(file, "predict_x0", true, true, "flow_prediction is only defined for the data-prediction form of UniPC");
  require_bool(file, "thresholding", false, false, "dynamic thresholding is not implemented");
  out.lower_order_final = lower_order_final;
  // A second-order last step onto sigma = 0 divides by an infinite log-SNR step (the reference yields NaN).
  OMNI_CHECK_INPUT(out.lower_order_final || out.solver_order == 1 || !out.final_sigma_zero, source,
                   ": lower_order_final = false with final_sigmas_type 'zero' is not supported (the last step "
                   "would be second order onto sigma 0, which is undefined)");
  if (solver_p != nullptr) {
    OMNI_CHECK_INPUT(solver_p->is_null(), source,
                     ": solver_p must be null (an external predictor is not supported), found ", solver_p->dump());
  }
  if (disable_corrector != nullptr) {
    OMNI_CHECK_INPUT(disable_corrector->is_array(), source,
                     ": disable_corrector must be a list of step indices, found ", disable_corrector->dump());
    for (const json& e : *disable_corrector) {
      OMNI_CHECK_INPUT(e.is_number_integer() || e.is_number_unsigned(), source,
                       ": disable_corrector must hold integers, found ", e.dump());
      out.disable_corrector.push_back(e.get<int64_t>());
    }
  }
  file.warn_unknown();
  return out;
}

FlowSchedule flow_sigma_schedule(int num_inference_steps, double flow_shift, int num_train_timesteps,
                                 bool final_sigma_zero, bool wan_grid) {
  OMNI_CHECK_USAGE(num_inference_steps >= 1, "the number of sampling steps must be at least 1, got ",
                   num_inference_steps);
  const int n = num_inference_steps;
  // numpy.linspace(start, stop, n+1): start + i * ((stop - start) / n), the endpoint (dropped here) set exactly.
  // diffusers: linspace(1, 1/T, n+1). Wan2.2: linspace(sigma_max, sigma_min, n+1) with the training table's
  // ends, float32 1 - alphas[0] = float32(1 - 1/T) and 0, read back as Python floats.
  const double start = wan_grid ? static_cast<double>(static_cast<float>(1.0 - 1.0 / num_train_timesteps)) : 1.0;
  const double stop = wan_grid ? 0.0 : 1.0 / static_cast<double>(num_train_timesteps);
  const double step = (stop - start) / static_cast<double>(n);
  std::vector<double> sigma(n);
  for (int i = 0; i < n; ++i) {
    const double u = static_cast<double>(i) * step + start;
    sigma[i] = flow_shift * u / (1.0 + (flow_shift - 1.0) * u);
  }
  // sigma = 1 would make lambda = log(0): diffusers nudges the first sigma just below 1 (Wan's grid starts below).
  if (!wan_grid && std::abs(sigma[0] - 1.0) < 1e-6) sigma[0] -= 1e-6;

  FlowSchedule out;
  out.timesteps.resize(n);
  out.sigmas.resize(n + 1);
  for (int i = 0; i < n; ++i) {
    // int64 conversion truncates toward zero, as torch's .to(int64) of the float64 array does.
    out.timesteps[i] = static_cast<int64_t>(sigma[i] * static_cast<double>(num_train_timesteps));
    out.sigmas[i] = static_cast<float>(sigma[i]);
  }
  out.sigmas[n] = final_sigma_zero ? 0.0f : static_cast<float>(sigma[n - 1]);
  return out;
}

void Scheduler::set_timesteps(int num_inference_steps, const at::Device& device) {
  schedule_ = flow_sigma_schedule(num_inference_steps, config_.flow_shift, config_.num_train_timesteps,
                                  config_.final_sigma_zero, config_.wan_grid);
  const int64_t n = static_cast<int64_t>(schedule_.timesteps.size());
  timesteps_ = at::from_blob(schedule_.timesteps.data(), {n}, at::TensorOptions().dtype(at::kLong))
                   .to(device, /*non_blocking=*/false, /*copy=*/true);  // [n]
  sigmas_ = at::from_blob(schedule_.sigmas.data(), {n + 1}, at::TensorOptions().dtype(at::kFloat))
                .to(device, /*non_blocking=*/false, /*copy=*/true);  // [n + 1]
  reset();
}

int64_t Scheduler::index_for_timestep(int64_t timestep) const {
  // diffusers' index_for_timestep: the first match, or the second where the timestep repeats (so a schedule
  // entered mid-way never skips a sigma), or the last step if the timestep is not in the schedule.
  const int64_t n = static_cast<int64_t>(schedule_.timesteps.size());
  std::vector<int64_t> matches;
  for (int64_t i = 0; i < n; ++i) {
    if (schedule_.timesteps[i] == timestep) matches.push_back(i);
  }
  return matches.empty() ? n - 1 : (matches.size() > 1 ? matches[1] : matches[0]);
}

at::Tensor Scheduler::add_noise(const at::Tensor& original, const at::Tensor& noise, int64_t timestep) const {
  OMNI_CHECK(!schedule_.timesteps.empty(), name(), " scheduler: add_noise() called before set_timesteps()");
  OMNI_CHECK(original.sizes() == noise.sizes(), name(), " scheduler: add_noise() of ", original.sizes(), " and ",
             noise.sizes());
  // _sigma_to_alpha_sigma_t on flow sigmas: alpha = 1 - sigma, in float32 like the reference's sigma tensor.
  const float sigma = schedule_.sigmas[static_cast<size_t>(index_for_timestep(timestep))];
  const float alpha = 1.0f - sigma;
  return original.mul(static_cast<double>(alpha)).add(noise.mul(static_cast<double>(sigma)));
}

int64_t Scheduler::begin_step(const at::Tensor& model_output, int64_t timestep, const at::Tensor& sample) {
  const int64_t n = static_cast<int64_t>(schedule_.timesteps.size());
  OMNI_CHECK(n > 0, name(), " scheduler: step() called before set_timesteps()");
  OMNI_CHECK(model_output.defined() && sample.defined(), name(), " scheduler: step() got an undefined tensor");
  OMNI_CHECK(model_output.sizes() == sample.sizes(), name(), " scheduler: model output shape ", model_output.sizes(),
             " differs from the sample shape ", sample.sizes());
  OMNI_CHECK(model_output.device() == sample.device(), name(), " scheduler: model output on ", model_output.device(),
             " but sample on ", sample.device());
  OMNI_CHECK(at::isFloatingType(model_output.scalar_type()) && at::isFloatingType(sample.scalar_type()), name(),
             " scheduler: model output and sample must be floating point");
  if (step_index_ < 0) step_index_ = index_for_timestep(timestep);
  OMNI_CHECK(step_index_ < n, name(), " scheduler: step ", step_index_, " is past the last of the ", n,
             " steps (set_timesteps() or reset() starts a new run)");
  return step_index_;
}

std::unique_ptr<Scheduler> make_scheduler(const nlohmann::json& config, Solver solver,
                                          std::optional<double> flow_shift_override, const std::string& source) {
  FlowSchedulerConfig parsed = parse_scheduler_config(config, solver, flow_shift_override, source);
  if (solver == Solver::kEuler) return std::make_unique<FlowMatchEulerScheduler>(std::move(parsed));
  return std::make_unique<UniPCMultistepScheduler>(std::move(parsed));
}

std::unique_ptr<Scheduler> make_wan_scheduler(Solver solver, double flow_shift) {
  OMNI_CHECK_USAGE(std::isfinite(flow_shift) && flow_shift > 0, "--flow-shift must be positive, got ", flow_shift);
  FlowSchedulerConfig config;  // its defaults are FlowUniPCMultistepScheduler's: order 2, bh2, lower_order_final
  config.flow_shift = flow_shift;
  config.wan_grid = true;
  if (solver == Solver::kEuler) return std::make_unique<FlowMatchEulerScheduler>(std::move(config));
  return std::make_unique<UniPCMultistepScheduler>(std::move(config));
}

}  // namespace omni::sched
