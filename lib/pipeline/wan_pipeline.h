// The Wan pipeline: what diffusers' WanPipeline and WanImageToVideoPipeline do for Wan2.2 (T2V-A14B with two
// experts, I2V-A14B, TI2V-5B in text and image mode), with HSDP-sharded models, classifier-free guidance
// batched or split over the cfg group, and sequence parallelism inside the transformer.
//
// One generate() call is one video: encode prompts, draw the initial noise exactly as diffusers does (seeded
// CPU generator, so every rank and layout gets the same numbers), denoise (expert per step by boundary_ratio,
// CFG only when the scale is above 1), and on the decoding rank decode with the VAE to frames in [0, 1].
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/timer.h"
#include "dist/device_mesh.h"
#include "dist/process_group.h"
#include "hsdp/hsdp_engine.h"
#include "models/fp8_weights.h"
#include "models/lora.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"
#include "pipeline/prompt_encoding.h"
#include "pipeline/sequence_parallel.h"
#include "pipeline/step_cache.h"
#include "pipeline/video_params.h"

namespace omni::text {
class Umt5Tokenizer;
}  // namespace omni::text
namespace omni::models {
class Umt5Encoder;
class WanTransformer3DModel;
class WanS2VTransformer;
class Wav2Vec2Model;
class AutoencoderKLWan;
}  // namespace omni::models

namespace omni::sched {
class Scheduler;
}  // namespace omni::sched

namespace omni::pipeline {

// Wan2.2-Animate's inputs for one segment: frames [first, first + count) of the videos padded to the segments'
// length by reflection (reflected_frame), each resized as diffusers' processors resize them.
struct AnimateFrames {
  at::Tensor pose;        // [1, 3, count, H, W] float32 in [-1, 1]
  at::Tensor face;        // [1, 3, count, S, S] float32 in [-1, 1], S the motion encoder's size
  at::Tensor background;  // replace mode: [1, 3, count, H, W] float32 in [-1, 1]; else undefined
  at::Tensor mask;        // replace mode: [1, 1, count, H, W] float32 in [0, 1], white where the character goes
};
using AnimateSource = std::function<AnimateFrames(int64_t first, int64_t count)>;

// What Animate's finished segments (S2V's clips) leave for the next ones (on the writing rank): a run that stops
// between them resumes from it with the same frames as one that did not stop.
struct AnimateProgress {
  int segments_done = 0;
  at::Tensor frames;  // [1, F, H, W, 3] uint8: the finished segments' frames
  // [1, 3, P, H, W] float32 in [-1, 1]: the last decoded frames the next one starts from (VideoParams::
  // carried_frames: Animate's last segment's prev_segment_frames, S2V's 73 motion frames)
  at::Tensor tail;
};
using AnimateCheckpoint = std::function<void(const AnimateProgress&)>;

struct GenerationRequest {
  std::string prompt;
  std::string negative_prompt;
  VideoParams video;      // video.image: `image` is given
  at::Tensor image;       // [1, 3, H, W] float32 in [-1, 1] at the output size, or undefined (text mode)
  at::Tensor last_image;  // likewise, the last frame (video.last_image: first-last-frame), or undefined
  // The images' pixels as read ([h, w, 3] uint8 at their own size, what load_image gives): the CLIP image
  // encoder's input (diffusers hands it the user's image, not the resized one).
  at::Tensor image_pixels;
  at::Tensor last_image_pixels;
  at::Tensor clip;  // video-to-video (video.video): [1, 3, F, H, W] float32 in [-1, 1], or undefined
  // VACE (WanVACEPipeline; each optional): the control video [1, 3, F, H, W] float32 in [-1, 1] (undefined:
  // diffusers' zeros, a grey clip), its mask [1, 3, F, H, W] float32 in [0, 1] (white generates, black keeps;
  // undefined: all ones), the reference images on their canvases, each [3, H, W] float32 in [-1, 1]
  // (io::vace_reference_image; video.reference_images of them), and the conditioning scale (one per VACE layer,
  // or one for all; empty: 1).
  at::Tensor control_video;
  at::Tensor mask_video;
  std::vector<at::Tensor> reference_images;
  std::vector<double> conditioning_scale;
  // Wan2.2-Animate (video.animate): each segment's pose, face (and replace mode's background and mask) frames;
  // `image` is the character at the video's size (diffusers' "fill": scaled into it, black around), and
  // image_pixels the image as read (CLIP's input).
  AnimateSource animate_frames;
  // On the writing rank: the progress a stopped run kept (segments_done 0: none), and where each finished
  // segment's is handed (unset: nowhere). The other ranks of the group take the segment count and tail from it.
  AnimateProgress animate_resume;
  AnimateCheckpoint animate_checkpoint;
  // Wan2.2-S2V (video.speech): `image` is the reference image at the video's size (resized and center-cropped as
  // Wan2.2 does), `speech` the recording's span as librosa.load(sr=16000) gives it, and `pose` the optional pose
  // video's frames [first, first + count) as [1, 3, count, H, W] float32 in [-1, 1] (past its end: -1 frames), or
  // unset.
  std::vector<float> speech;
  std::function<at::Tensor(int64_t first, int64_t count)> pose;
  bool decode = true;         // this rank gets the frames (the writing rank)
  bool group_decodes = true;  // the writing rank of this rank's video group decodes (not on a repeat run)
  bool decode_band = false;   // --vae-parallel: this rank decodes its band (every rank of the group, together)
  bool keep_tensors = false;  // collect the --save-tensors intermediates
};

struct StepInfo {
  int step;  // 0-based, within the segment
  int num_steps;
  int64_t timestep;
  const char* expert;  // "transformer" / "transformer_2"
  double seconds;      // of this step
  bool cached;         // the step cache skipped this step's blocks
  int segment = 0;     // Animate's segment (0-based), of num_segments; other videos have one
  int num_segments = 1;
};
using StepCallback = std::function<void(const StepInfo&)>;

struct GenerationResult {
  at::Tensor frames;  // [1, F, H, W, 3] uint8 levels on the host (decoding rank only); --save-tensors keeps float32
  std::vector<std::pair<std::string, at::Tensor>> tensors;  // --save-tensors names, float32
  PhaseTimes times;                                         // text_encode, denoise, decode
  int64_t vae_peak_bytes = 0;  // the decode's own peak on this rank (device bytes on a GPU, host RSS growth on the CPU)
  // The peak from the text encoding to the end of the denoising loop: all the process holds (device bytes
  // allocated on a GPU, resident host bytes on the CPU), weights included, the load's and decode's peaks not.
  int64_t denoise_peak_bytes = 0;
  StepCacheCounts step_cache[2];             // transformer calls computed / skipped per expert (--step-cache)
  std::vector<int64_t> host_reads_per_step;  // OMNI_COUNT_HOST_READS: the loop's host reads per step (else empty)
  PromptText prompt;                         // as given, as cleaned, its tokens
  PromptText negative_prompt;                // likewise, with guidance only (empty without: never tokenized)
  int segments = 1;                          // Animate: the video's segments
  int segments_reused = 0;                   // of them, the finished ones a stopped run left, not run again
};

class WanPipeline {
 public:
  // Loads every component of `spec` (a resolved model, its configs read once). With HSDP, the text encoder and
  // the transformers are sharded over `mesh`'s shard group; the VAE is whole on every rank. `mesh` may be null
  // for a single process. The LoRA files are checked against the experts before any weight is read. `settings`
  // come checked against `spec` (job/run_settings.h: LoRA files only for experts the model has, a boundary
  // ratio for two).
  WanPipeline(const ModelSpec& spec, const PipelineSettings& settings, const dist::DeviceMesh* mesh);
  ~WanPipeline();

  GenerationResult generate(const GenerationRequest& request, const StepCallback& on_step = nullptr);

  const io::ModelIndex& index() const { return index_; }
  // The expert switch the run uses (none for a one-expert model).
  std::optional<double> boundary_ratio() const { return settings_.boundary_ratio; }
  // Bytes of all weights of all components as held in memory (whole, not per rank).
  int64_t param_bytes_total() const { return param_bytes_total_; }
  const hsdp::HsdpStats& hsdp_stats() const { return *stats_; }
  // Of hsdp_stats()'s float8 weights (stored and quantized), UMT5's.
  int64_t text_encoder_float8_weights() const { return text_encoder_float8_weights_; }
  // Bytes one denoising step gathers (transformer in use), from the last generate().
  int64_t gathered_bytes_last_step() const { return gathered_last_step_; }
  int64_t disk_bytes_read() const { return disk_bytes_read_; }

 private:
  // The latent video's size: [1, channels, frames, height, width].
  struct LatentShape {
    int64_t channels = 0, frames = 0, height = 0, width = 0;
  };
  // Image conditioning (step 3): i2v's mask-and-latents condition [1, 4 + z, T, h, w] (the mask 1 on the given
  // frames: the first, and the last with a last image) or ti2v's image latent [1, z, 1, h, w]; ti2v's
  // first-frame mask [1, 1, T, h, w] (0 on the image's frame in image mode).
  struct ImageCondition {
    at::Tensor condition;
    at::Tensor first_frame_mask;  // TI2V: [1, 1, T, h, w] float32, 0 on the conditioning frame
    at::Tensor token_mask;        // TI2V: the same per token, [1, S] float32 on the host (the timesteps' runs)
  };
  // One denoising step's transformer input: the latents (with the condition), the timestep as the model
  // takes it, and as diffusers passes it where that differs in shape (for --dump-tensors; else undefined).
  struct ModelInput {
    at::Tensor x;
    at::Tensor timestep;
    at::Tensor recorded_timestep;
  };
  // Where a generate() call is: its transformer calls so far (numbered as diffusers makes them: cond, uncond)
  // and its step.
  struct CallState {
    int calls = 0;
    int step = 0;       // within the segment
    int step_base = 0;  // the steps of the segments before (Animate): names and dumps number steps over the video
    int num_steps = 0;
    at::Tensor pose;          // Animate: this segment's pose latents [1, z, T, h, w] in the transformer's dtype
    at::Tensor face;          // and its face crops [1, 3, F, S, S] (the unconditional branch: all -1), else undefined
    at::Tensor image_states;  // the CLIP image encoder's states of this video (Wan2.1 image models), else undefined
    at::Tensor control;       // VACE's context [1, vace_in_channels, R + T, h, w] of this video, else undefined
    std::vector<double> control_scale;  // with it: one scale per VACE layer
    // Wan2.2-S2V, this clip's: the reference latent [1, z, 1, h, w], the motion latents [1, z, 19, h, w], the pose
    // latents [1, z, T, h, w] (zeros without a pose video), the audio slots [1, 25, A, num_frames] (the
    // unconditional branch: zeros), and whether the motion tokens are left out (the first clip).
    at::Tensor ref_latents, motion_latents, cond_states, audio;
    bool drop_motion = false;
  };

  // The prompts' embeddings (the negative one with guidance), the prompts described into `result`.
  struct Embeds {
    at::Tensor prompt, negative;
  };
  Embeds encode_prompt_embeds(const GenerationRequest& req, GenerationResult& result);
  // Step 4: the denoising loop over `timesteps` from `latents` (the schedule's state in `scheduler`); `input` makes
  // each step's transformer input from the latents and the timestep. `expert_of` picks each step's expert and
  // guidance scale. Steps are kept and reported as state.step_base + i.
  using InputFn = std::function<ModelInput(const at::Tensor& latents, int64_t t)>;
  at::Tensor denoise(at::Tensor latents, const std::vector<int64_t>& timesteps, sched::Scheduler& scheduler,
                     const InputFn& input, const Embeds& embeds, CallState& state, const GenerationRequest& req,
                     const StepCallback& on_step, StepInfo segment, GenerationResult& result);
  // Wan2.2-Animate: generate() for video.animate, segment by segment (wan_animate_pipeline.cpp).
  GenerationResult generate_animate(const GenerationRequest& req, const StepCallback& on_step);
  // Wan2.2-S2V: generate() for video.speech, clip by clip (wan_s2v_pipeline.cpp).
  GenerationResult generate_s2v(const GenerationRequest& req, const StepCallback& on_step);
  // S2V: the recording's wav2vec2 features bucketed per video frame, [1, 25, A, clips x num_frames] in the
  // transformer's dtype.
  at::Tensor encode_speech(const GenerationRequest& req, GenerationResult& result);
  int temporal_factor() const;
  at::Tensor encode_text(const PromptText& prompt, int max_sequence_length);
  LatentShape latent_shape(const VideoParams& video) const;
  // Step 2: the initial noise, drawn on the CPU from a generator seeded like torch.Generator("cpu").manual_seed.
  at::Tensor prepare_latents(const VideoParams& video, const LatentShape& shape) const;
  ImageCondition prepare_image_condition(const GenerationRequest& req, const LatentShape& shape,
                                         GenerationResult& result) const;
  // A pixel clip [1, 3, F, H, W] in [-1, 1] (float32, on the device) through the VAE encoder: its mean (diffusers'
  // argmax), normalized; dumped as vae_encode.in / .mean, and kept for --save-tensors as `keep_as` (null: not).
  at::Tensor encode_normalized(const at::Tensor& clip, const char* keep_as, GenerationResult& result) const;
  // VACE: the context [1, 2 z + sf^2, R + T, h, w] in the transformer's dtype (WanVACEPipeline's
  // conditioning_latents: the control video's inactive and reactive latents, the reference images' latents in
  // front, and the mask); undefined for other models.
  at::Tensor prepare_vace_condition(const GenerationRequest& req, const LatentShape& shape,
                                    GenerationResult& result) const;
  // Video-to-video: the clip's normalized latents [1, z, T, h, w] (the VAE's mean, as diffusers' argmax).
  at::Tensor encode_clip(const GenerationRequest& req, const LatentShape& shape, GenerationResult& result) const;
  // `video`: the request's VideoParams (video-to-video records its timestep as WanVideoToVideoPipeline passes it).
  ModelInput model_input(const at::Tensor& latents, const ImageCondition& image, int64_t t, const LatentShape& shape,
                         const VideoParams& video) const;
  // Step 5: the frames on the writing rank (the whole group decodes with --vae-parallel).
  void decode(const GenerationRequest& req, const at::Tensor& latents, GenerationResult& result);
  // The decode itself: normalized latents [1, z, T, h, w] -> the video [1, 3, F, H, W] in [-1, 1] (clamped) on the
  // writing rank, undefined on the others; its phase and peak into `result` (the peak: the largest of its calls).
  at::Tensor decode_video(const GenerationRequest& req, const at::Tensor& latents, GenerationResult& result);
  // The decoded frames [1, 3, F, H, W] in [-1, 1] -> [1, F, H, W, 3] uint8 levels on the host into result.frames
  // (appended along F: Animate's segments), with --save-tensors the float32 frames too.
  void keep_frames(const GenerationRequest& req, at::Tensor video, GenerationResult& result) const;
  // Animate: the last `prev` of a segment's `frames` decoded frames ([1, 3, frames, H, W] on the writing rank,
  // undefined elsewhere) on every rank of the video group.
  at::Tensor share_tail(const GenerationRequest& req, const at::Tensor& decoded, int64_t frames, int64_t prev);
  // Animate: the finished segments of a stopped run (req.animate_resume on the writing rank), agreed over the video
  // group; their frames into `result`, the last one's tail into `tail` on every rank. Returns their count.
  int resume_animate(const GenerationRequest& req, int segments, at::Tensor& tail, GenerationResult& result);
  // One forward of `expert` (0 or 1) on a batch, through HSDP hooks when sharded.
  // The CLIP image encoder's penultimate states [I, N, E] of the request's image (and last image): what
  // WanImageToVideoPipeline.encode_image gives. Undefined for a model without an image encoder.
  at::Tensor encode_image_states(const GenerationRequest& req, GenerationResult& result);
  // `call`: the video's conditioning every call takes (CLIP image states, VACE's context, S2V's clip inputs).
  // `branch`: the input that differs between the guidance branches, for the batch's rows: Animate's face crops,
  // S2V's audio slots (undefined for other models).
  at::Tensor run_transformer(int expert, const at::Tensor& x, const at::Tensor& timestep, const at::Tensor& context,
                             const CallState& call, const at::Tensor& branch = at::Tensor());
  // The guided velocity: cond and uncond batched, or each on its cfg rank and exchanged.
  at::Tensor guided_prediction(int expert, const ModelInput& input, const at::Tensor& prompt_embeds,
                               const at::Tensor& negative_embeds, double scale, bool do_cfg, CallState& call);

  io::ModelIndex index_;
  PipelineSettings settings_;
  const dist::DeviceMesh* mesh_;
  dist::DeviceGroups groups_;                        // every device group of the run, made once
  std::shared_ptr<dist::ProcessGroup> shard_group_;  // null: no HSDP sharding (or a shard of one rank)
  std::shared_ptr<dist::ProcessGroup> cfg_group_;    // null: no CFG parallelism
  std::unique_ptr<SequenceParallel> sp_;             // null when ulysses x ring is 1
  dist::ProcessGroup* vae_group_ = nullptr;          // --vae-parallel: the video group
  dist::ProcessGroup* video_group_ = nullptr;        // Animate: the video group (the decoded tail goes to every rank)
  dist::ProcessGroup* agree_group_ = nullptr;        // --step-cache: the ranks that must skip alike
  std::unique_ptr<StepCache> step_cache_;
  std::shared_ptr<hsdp::BufferPool> pool_;
  std::shared_ptr<hsdp::HsdpStats> stats_;

  std::unique_ptr<text::Umt5Tokenizer> tokenizer_;
  std::unique_ptr<models::Umt5Encoder> text_encoder_;
  std::unique_ptr<hsdp::ShardedModel> text_encoder_sharded_;
  // Wan2.1's image models: the CLIP image encoder, sharded like the text encoder, and its preprocessing.
  std::unique_ptr<models::ClipVisionModel> image_encoder_;
  std::unique_ptr<hsdp::ShardedModel> image_encoder_sharded_;
  std::optional<io::ClipImageProcessorConfig> image_processor_;
  std::vector<std::unique_ptr<models::WanTransformer3DModel>> experts_;  // transformer, transformer_2
  std::vector<std::unique_ptr<hsdp::ShardedModel>> experts_sharded_;
  // Wan2.2-S2V: its transformer (in place of experts_), sharded like them, and its wav2vec2, sharded like the text
  // encoder (both null for other models).
  std::unique_ptr<models::WanS2VTransformer> s2v_;
  std::unique_ptr<hsdp::ShardedModel> s2v_sharded_;
  std::unique_ptr<models::Wav2Vec2Model> audio_encoder_;
  std::unique_ptr<hsdp::ShardedModel> audio_encoder_sharded_;
  std::optional<io::Wav2Vec2FeatureExtractorConfig> audio_processor_;
  std::unique_ptr<models::AutoencoderKLWan> vae_;
  nlohmann::json scheduler_config_;
  std::string scheduler_source_;

  int64_t param_bytes_total_ = 0;
  int64_t text_encoder_float8_weights_ = 0;
  int64_t gathered_last_step_ = 0;
  int64_t disk_bytes_read_ = 0;
};

}  // namespace omni::pipeline
