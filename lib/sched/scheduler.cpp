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

// A key's value, or nullptr when absent (the getters below also treat a JSON null as absent).
const json* find_key(const json& config, const char* key) {
  auto it = config.find(key);
  return it == config.end() ? nullptr : &*it;
}

// Keys whose value must equal the one this implementation supports (diffusers' default in parentheses).
void require_bool(const json& config, const char* key, bool fallback, bool required, const std::string& why,
                  const std::string& source) {
  const bool value = io::json_bool_or(config, key, fallback, source);
  OMNI_CHECK_INPUT(value == required, source, ": ", key, " = ", value ? "true" : "false", " is not supported (need ",
                   required ? "true" : "false", ": ", why, ")");
}

}  // namespace

FlowSchedulerConfig parse_scheduler_config(const nlohmann::json& config, const std::string& solver,
                                           std::optional<double> flow_shift_override, const std::string& source) {
  OMNI_CHECK_USAGE(solver == "unipc" || solver == "euler", "--sample-solver must be 'unipc' or 'euler', got '", solver,
                   "'");
  OMNI_CHECK_INPUT(config.is_object(), source, ": expected a JSON object, found ", config.type_name());
  FlowSchedulerConfig out;

  const std::string cls = io::json_string_or(config, "_class_name", "UniPCMultistepScheduler", source);
  OMNI_CHECK_INPUT(cls == "UniPCMultistepScheduler", source, ": _class_name '", cls,
                   "' is not supported (expected 'UniPCMultistepScheduler', the Wan2.2 diffusers layout)");

  // Both solvers integrate the velocity on the flow-sigma schedule; these keys select it (the defaults are
  // diffusers' constructor defaults, so a config missing them is rejected as diffusers would compute
  // something else).
  const std::string prediction = io::json_string_or(config, "prediction_type", "epsilon", source);
  OMNI_CHECK_INPUT(prediction == "flow_prediction", source, ": prediction_type '", prediction,
                   "' is not supported (only 'flow_prediction': the Wan models predict the flow velocity)");
  require_bool(config, "use_flow_sigmas", false, true, "the flow-matching sigma schedule", source);
  // In diffusers these take precedence over use_flow_sigmas.
  require_bool(config, "use_karras_sigmas", false, false, "only flow sigmas are implemented", source);
  require_bool(config, "use_exponential_sigmas", false, false, "only flow sigmas are implemented", source);
  require_bool(config, "use_beta_sigmas", false, false, "only flow sigmas are implemented", source);
  // diffusers validates the spacing before the flow-sigma branch replaces the timesteps.
  const std::string spacing = io::json_string_or(config, "timestep_spacing", "linspace", source);
  OMNI_CHECK_INPUT(spacing == "linspace" || spacing == "leading" || spacing == "trailing", source,
                   ": timestep_spacing '", spacing, "' is not one of 'linspace', 'leading', 'trailing'");

  const int64_t train_steps = io::json_int_or(config, "num_train_timesteps", 1000, source);
  OMNI_CHECK_INPUT(train_steps > 0 && train_steps <= (1 << 24), source,
                   ": num_train_timesteps must be positive, found ", train_steps);
  out.num_train_timesteps = static_cast<int>(train_steps);

  if (flow_shift_override) {
    out.flow_shift = *flow_shift_override;
    OMNI_CHECK_USAGE(std::isfinite(out.flow_shift) && out.flow_shift > 0, "--flow-shift must be positive, got ",
                     out.flow_shift);
  } else {
    const json* v = find_key(config, "flow_shift");
    if (v != nullptr) {
      OMNI_CHECK_INPUT(v->is_number(), source, ": flow_shift must be a number, found ", v->dump(),
                       " (or pass --flow-shift)");
      out.flow_shift = v->get<double>();
      OMNI_CHECK_INPUT(std::isfinite(out.flow_shift) && out.flow_shift > 0, source,
                       ": flow_shift must be positive, found ", out.flow_shift);
    }
  }

  const std::string final_type = io::json_string_or(config, "final_sigmas_type", "zero", source);
  OMNI_CHECK_INPUT(final_type == "zero" || final_type == "sigma_min", source, ": final_sigmas_type '", final_type,
                   "' is not supported (expected 'zero' or 'sigma_min')");
  out.final_sigma_zero = final_type == "zero";

  if (solver == "euler") return out;  // the rest configures UniPC only

  const int64_t order = io::json_int_or(config, "solver_order", 2, source);
  OMNI_CHECK_INPUT(order == 1 || order == 2, source, ": solver_order ", order,
                   " is not supported (expected 1 or 2; the Wan checkpoints use 2)");
  out.solver_order = static_cast<int>(order);
  const std::string type = io::json_string_or(config, "solver_type", "bh2", source);
  // diffusers maps the DPM-Solver names onto bh2.
  const bool is_bh2 = type == "bh2" || type == "midpoint" || type == "heun" || type == "logrho";
  OMNI_CHECK_INPUT(is_bh2 || type == "bh1", source, ": solver_type '", type,
                   "' is not supported (expected 'bh2' or 'bh1')");
  out.bh2 = is_bh2;
  require_bool(config, "predict_x0", true, true,
               "flow_prediction is only defined for the data-prediction form of UniPC", source);
  require_bool(config, "thresholding", false, false, "dynamic thresholding is not implemented", source);
  out.lower_order_final = io::json_bool_or(config, "lower_order_final", true, source);
  // A second-order last step onto sigma = 0 divides by an infinite log-SNR step (the reference yields NaN).
  OMNI_CHECK_INPUT(out.lower_order_final || out.solver_order == 1 || !out.final_sigma_zero, source,
                   ": lower_order_final = false with final_sigmas_type 'zero' is not supported (the last step "
                   "would be second order onto sigma 0, which is undefined)");
  if (const json* v = find_key(config, "solver_p"); v != nullptr) {
    OMNI_CHECK_INPUT(v->is_null(), source, ": solver_p must be null (an external predictor is not supported), found ",
                     v->dump());
  }
  if (const json* v = find_key(config, "disable_corrector"); v != nullptr && !v->is_null()) {
    OMNI_CHECK_INPUT(v->is_array(), source, ": disable_corrector must be a list of step indices, found ", v->dump());
    for (const json& e : *v) {
      OMNI_CHECK_INPUT(e.is_number_integer() || e.is_number_unsigned(), source,
                       ": disable_corrector must hold integers, found ", e.dump());
      out.disable_corrector.push_back(e.get<int64_t>());
    }
  }
  return out;
}

FlowSchedule flow_sigma_schedule(int num_inference_steps, double flow_shift, int num_train_timesteps,
                                 bool final_sigma_zero) {
  OMNI_CHECK_USAGE(num_inference_steps >= 1, "the number of sampling steps must be at least 1, got ",
                   num_inference_steps);
  const int n = num_inference_steps;
  // numpy.linspace(1, 1/T, n+1): start + i * ((stop - start) / n), the endpoint (dropped here) set exactly.
  const double start = 1.0;
  const double stop = 1.0 / static_cast<double>(num_train_timesteps);
  const double step = (stop - start) / static_cast<double>(n);
  std::vector<double> sigma(n);
  for (int i = 0; i < n; ++i) {
    const double u = static_cast<double>(i) * step + start;
    sigma[i] = flow_shift * u / (1.0 + (flow_shift - 1.0) * u);
  }
  // sigma = 1 would make lambda = log(0): the reference nudges the first sigma just below 1.
  if (std::abs(sigma[0] - 1.0) < 1e-6) sigma[0] -= 1e-6;

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
                                  config_.final_sigma_zero);
  const int64_t n = static_cast<int64_t>(schedule_.timesteps.size());
  timesteps_ = at::from_blob(schedule_.timesteps.data(), {n}, at::TensorOptions().dtype(at::kLong))
                   .to(device, /*non_blocking=*/false, /*copy=*/true);  // [n]
  sigmas_ = at::from_blob(schedule_.sigmas.data(), {n + 1}, at::TensorOptions().dtype(at::kFloat))
                .to(device, /*non_blocking=*/false, /*copy=*/true);  // [n + 1]
  reset();
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
  if (step_index_ < 0) {
    // diffusers' index_for_timestep: the first match, or the second where the timestep repeats (so a
    // schedule entered mid-way never skips a sigma), or the last step if the timestep is not in the schedule.
    std::vector<int64_t> matches;
    for (int64_t i = 0; i < n; ++i) {
      if (schedule_.timesteps[i] == timestep) matches.push_back(i);
    }
    step_index_ = matches.empty() ? n - 1 : (matches.size() > 1 ? matches[1] : matches[0]);
  }
  OMNI_CHECK(step_index_ < n, name(), " scheduler: step ", step_index_, " is past the last of the ", n,
             " steps (set_timesteps() or reset() starts a new run)");
  return step_index_;
}

std::unique_ptr<Scheduler> make_scheduler(const nlohmann::json& config, const std::string& solver,
                                          std::optional<double> flow_shift_override, const std::string& source) {
  FlowSchedulerConfig parsed = parse_scheduler_config(config, solver, flow_shift_override, source);
  if (solver == "euler") return std::make_unique<FlowMatchEulerScheduler>(std::move(parsed));
  return std::make_unique<UniPCMultistepScheduler>(std::move(parsed));
}

}  // namespace omni::sched
