#include "job/run_settings.h"

#include "core/error.h"
#include "dist/device.h"
#include "models/lora.h"

namespace omni::job {
namespace {

constexpr const char* kCheckpoint = "checkpoint ";

// The user's value (flag, --config, prompts-file line), else the checkpoint's, else the option's own (a preset's,
// or unset).
void resolve_default(const config::GenerateOptions& opts, const char* key, std::optional<double> option,
                     std::optional<double> checkpoint, const std::string& checkpoint_file, std::optional<double>* value,
                     std::string* source) {
  auto it = opts.sources.find(key);
  const std::string option_source = it == opts.sources.end() ? "default" : it->second.str();
  if (!config::set_by_user(opts, key) && checkpoint) {
    *value = checkpoint;
    *source = kCheckpoint + checkpoint_file;
  } else {
    *value = option;
    *source = option_source;
  }
}

}  // namespace

pipeline::PipelineSettings resolve_settings(const config::GenerateOptions& opts, const pipeline::ModelSpec& model) {
  pipeline::PipelineSettings s;
  s.dtype = opts.dtype;
  s.vae_dtype = opts.vae_dtype;
  // (--device cuda without a GPU is select_device's error, at load.)
  const bool cuda = opts.device.kind == dist::DeviceRequest::kCuda || dist::runs_on_cuda(opts.device);
  OMNI_CHECK_USAGE(cuda || (s.dtype != c10::kHalf && s.vae_dtype != c10::kHalf),
                   "--dtype/--vae-dtype float16 needs --device cuda (LibTorch's CPU kernels have no half-precision "
                   "matrix products); use bfloat16 or float32 on the CPU");
  s.use_hsdp = opts.parallel.use_hsdp;
  s.transformer_weights = {opts.weight_format == config::WeightFormat::kFloat8, opts.fp8_layers, {}};
  s.text_encoder_weights = {opts.text_encoder_weight_format == config::WeightFormat::kFloat8, opts.fp8_layers, {}};
  s.fp8_matmul = opts.fp8_matmul;
  if (s.fp8_matmul && !s.transformer_weights.float8) {
    // Without --weight-dtype the float8 weights are the ones the checkpoints store (their headers tell).
    bool any = false;
    for (size_t e = 0; e < model.experts.size() && !any; ++e) any = model.stores_float8(static_cast<int>(e));
    OMNI_CHECK_USAGE(any,
                     "--fp8-matmul multiplies float8 weights: give --weight-dtype float8_e4m3fn, or "
                     "transformer checkpoints that store their weights in float8 (fp8_scaled; those of ",
                     model.root(), " store none)");
  }
  OMNI_CHECK_USAGE(model.s2v || !opts.start_from_ref, "--start-from-ref: only Wan2.2-S2V starts its video from the ",
                   "reference image; this model is ", model.index().class_name);
  if (model.s2v) {
    // What Wan2.2-S2V's transformer (Wan's own names, one clip per call) does not take yet.
    OMNI_CHECK_USAGE(opts.step_cache == pipeline::StepCacheMode::kNone,
                     "--step-cache: not available for Wan2.2-S2V yet");
  }
  s.vae_parallel = opts.vae_parallel;
  s.step_cache = opts.step_cache;
  s.step_cache_threshold = opts.step_cache_threshold.value_or(pipeline::default_step_cache_threshold(s.step_cache));
  s.sample_solver = opts.sample_solver;

  resolve_default(opts, "flow-shift", opts.flow_shift, model.scheduler_flow_shift, model.scheduler_source,
                  &s.flow_shift, &s.flow_shift_source);
  if (model.experts.size() == 2) {
    resolve_default(opts, "boundary-ratio", opts.boundary_ratio, model.index().boundary_ratio,
                    model.dir->index_source(), &s.boundary_ratio, &s.boundary_ratio_source);
    OMNI_CHECK_INPUT(s.boundary_ratio.has_value(), model.dir->index_source(),
                     ": two transformers but no boundary_ratio (give --boundary-ratio)");
  }

  const char* flags[2] = {"--lora", "--lora-2"};
  OMNI_CHECK_USAGE(model.experts.size() == 2 || opts.lora_2.empty(), "--lora-2: ", model.root(),
                   " has no transformer_2 (one transformer: use --lora)");
  for (int e = 0; e < 2; ++e) {
    s.lora_label[e] = flags[e];
    for (const auto& l : e == 0 ? opts.lora : opts.lora_2)
      s.lora[e].push_back({models::lora_file_path(l.path, flags[e]), l.scale});
  }
  s.lora_strict = opts.lora_strict;
  return s;
}

std::vector<config::ResolvedSetting> checkpoint_settings(const pipeline::PipelineSettings& s) {
  std::vector<config::ResolvedSetting> out;
  auto from_checkpoint = [](const std::string& source) { return source.rfind(kCheckpoint, 0) == 0; };
  if (s.flow_shift && from_checkpoint(s.flow_shift_source))
    out.push_back({"flow-shift", *s.flow_shift, s.flow_shift_source});
  if (s.boundary_ratio && from_checkpoint(s.boundary_ratio_source))
    out.push_back({"boundary-ratio", *s.boundary_ratio, s.boundary_ratio_source});
  return out;
}

}  // namespace omni::job
