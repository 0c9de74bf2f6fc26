// The run's settings resolved once (docs/DESIGN.md section 2): one function from the options and the model spec
// to the typed pipeline settings that the memory planner, the pipeline and the sidecars all read. The
// checkpoint's own defaults (scheduler_config.json's flow_shift, model_index.json's boundary_ratio) are resolved
// here into typed fields with their source; where they do not fit the flags, the error names the flag.
#pragma once

#include <vector>

#include "config/options.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"

namespace omni::job {

// The pipeline's settings for `opts` on `model`: every field but `device`, which load() sets once the device
// is selected. Usage errors name the flag: --lora-2 on a one-expert model, two experts without a boundary ratio,
// --fp8-matmul without float8 weights, float16 on the CPU. LoRA paths resolved to their files (input errors).
pipeline::PipelineSettings resolve_settings(const config::GenerateOptions& opts, const pipeline::ModelSpec& model);

// The settings the checkpoint decided where the user gave none: flow-shift and boundary-ratio as shown and
// recorded in the options' place (config::describe, the sidecar).
std::vector<config::ResolvedSetting> checkpoint_settings(const pipeline::PipelineSettings& settings);

}  // namespace omni::job
