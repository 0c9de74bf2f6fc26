// What a Wan pipeline is asked to run, typed in the library's own terms: the task, the step cache's mode and
// every setting the pipeline takes (job/ resolves them once from the options and the model). No ATen here: the
// CLI's option table (config/options.h) includes it to map its strings onto these enums.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <vector>

#include "models/fp8_weights.h"
#include "models/lora_source.h"
#include "sched/solver.h"

namespace omni::pipeline {

// --step-cache (docs/DESIGN.md section 10; pipeline/step_cache.h).
enum class StepCacheMode { kNone, kTeaCache, kFirstBlock };
// The threshold a mode uses when none is given.
double default_step_cache_threshold(StepCacheMode mode);

// kFirstLastFrameToVideo: image-to-video with the last frame given too (WanImageToVideoPipeline's last_image).
// kVideoToVideo: a text-to-video model (T2V, TI2V-5B in text mode) started from a noised clip
// (WanVideoToVideoPipeline). kVace: a VACE model (WanVACEPipeline), conditioned on a control video, its mask
// and reference images, each optional. kAnimate: Wan2.2-Animate (WanAnimatePipeline), a character image animated
// by a pose and a face video, segment by segment (or replacing the person of a background video).
enum class Task {
  kTextToVideo,
  kImageToVideo,
  kTextImageToVideo,
  kFirstLastFrameToVideo,
  kVideoToVideo,
  kVace,
  kAnimate,
  kS2V  // Wan2.2-S2V (WanS2VPipeline): a reference image and a recording, clip after clip for the whole audio
};
const char* task_name(Task task);

struct PipelineSettings {
  c10::Device device = c10::kCPU;
  c10::ScalarType dtype = c10::kFloat;  // transformer and text encoder
  c10::ScalarType vae_dtype = c10::kFloat;
  bool use_hsdp = false;
  models::WeightHolding transformer_weights;   // the experts' float8 Linear weights (--weight-dtype, --fp8-layers)
  models::WeightHolding text_encoder_weights;  // UMT5's (--text-encoder-weight-dtype, --fp8-layers)
  bool fp8_matmul = false;                     // --fp8-matmul
  sched::Solver sample_solver = sched::Solver::kUniPC;
  // The flow shift of the sigmas: the user's, else the checkpoint's scheduler_config.json, else the preset's;
  // unset: the scheduler config's own default. `flow_shift_source` says which ("flag", "checkpoint FILE", ...).
  std::optional<double> flow_shift;
  std::string flow_shift_source;
  // The expert switch of a two-expert model (a fraction of the training timesteps): the user's, else
  // model_index.json's, else the preset's; unset for one expert.
  std::optional<double> boundary_ratio;
  std::string boundary_ratio_source;
  // LoRA files merged at load: lora[0] into `transformer`, lora[1] into `transformer_2` (resolved file paths).
  // `lora_label` names each list in messages (the job's flags: "--lora", "--lora-2").
  std::vector<models::LoraSource> lora[2];
  std::string lora_label[2] = {"LoRA of transformer", "LoRA of transformer_2"};
  // Keys of Wan2.1 image-conditioning modules (k_img, v_img, img_emb) a Wan2.2 model lacks: an error rather
  // than skipped with a warning (--lora-strict).
  bool lora_strict = false;
  // --vae-parallel: the ranks of each data-parallel group decode a video together, a band of rows each.
  bool vae_parallel = false;
  // --step-cache and --step-cache-threshold.
  StepCacheMode step_cache = StepCacheMode::kNone;
  double step_cache_threshold = 0.0;
};

}  // namespace omni::pipeline
