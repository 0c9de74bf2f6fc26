// Wan2.2-S2V's WanS2V.generate (wan/speech2video.py; docs/s2v-reference.md section 7), as a WanPipeline member:
// a reference image made to speak or sing a recording, clip after clip until the audio ends, each clip continued
// from the last motion frames the one before decoded.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/tensor_dump.h"
#include "dist/device.h"
#include "models/hsdp_sharding.h"
#include "models/wan_s2v_transformer.h"
#include "models/wav2vec2_model.h"
#include "pipeline/pipeline_tensors.h"
#include "pipeline/s2v_audio_encoder.h"
#include "pipeline/wan_pipeline.h"
#include "sched/scheduler.h"

namespace omni::pipeline {
at::Tensor WanPipeline::encode_speech(const GenerationRequest& req, GenerationResult& result) {
  ScopedPhase phase(result.times, "audio_encode", settings_.device);
  const VideoParams& video = req.video;
  at::Tensor states;  // [25, T50, A]: every wav2vec2 hidden state, 50 per second
  {
    models::HsdpHooks hooks(audio_encoder_sharded_.get());
    states = speech_hidden_states(*audio_encoder_, req.speech, *audio_processor_, settings_.device, &hooks);
  }
  if (audio_encoder_sharded_) audio_encoder_sharded_->settle_timings();
  pool_->clear();
  // 50 -> 30 per second, then one slot per video frame at 16 fps (Wan2.2's sample_fps).
  const AudioBuckets buckets = bucket_audio_features(interpolate_audio_features(states, 50.0, 30.0),
                                                     static_cast<double>(kS2VFps), video.num_frames);
  OMNI_CHECK(buckets.num_clips >= video.speech_clips, "the recording makes ", buckets.num_clips,
             " clips; the video was planned with ", video.speech_clips);
  at::Tensor audio = buckets.embeds.unsqueeze(0);  // [1, 25, A, clips x num_frames]
  if (req.keep_tensors) result.tensors.emplace_back("audio_embeds", to_float_cpu(audio));
  return audio.to(settings_.dtype);
}

GenerationResult WanPipeline::generate_s2v(const GenerationRequest& req, const StepCallback& on_step) {
  GenerationResult result;
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const int tf = temporal_factor();
  OMNI_CHECK(req.image.defined() && !req.speech.empty(),
             "GenerationRequest: an S2V video needs the reference image "
             "and the recording's samples");
  OMNI_CHECK(!video.video && !video.last_image && video.reference_images == 0 && !video.animate,
             "GenerationRequest: an S2V video takes no other conditioning");
  OMNI_CHECK(video.num_frames % tf == 0 && video.speech_clips > 0, "GenerationRequest: S2V clips of ", video.num_frames,
             " frames (a multiple of ", tf, "), ", video.speech_clips, " clips");
  auto keep = [&](const std::string& name, const at::Tensor& t) {
    if (req.keep_tensors) result.tensors.emplace_back(name, to_float_cpu(t));
  };
  dist::reset_peak_device_bytes(dev);
  reset_peak_rss();

  // The prompts (the negative one with guidance), the recording's features.
  const Embeds embeds = encode_prompt_embeds(req, result);
  const at::Tensor audio = encode_speech(req, result);

  // The reference image's latent; the motion latents of 73 grey frames (zeros in [-1, 1]), the first clip's; with
  // start_from_ref the reference image in the last 6 of them (Wan2.2 writes it into the pixel buffer the later
  // clips' motion frames are shifted out of, so a clip shorter than 73 frames leaves some of them there).
  const LatentShape shape = latent_shape(video);  // a clip's latent frames
  const int64_t frames = video.num_frames;
  const auto vae_dtype = settings_.vae_dtype;
  CallState state;
  at::Tensor last_frames;  // [1, 3, 73, H, W] in [-1, 1]: the frames the next clip continues from
  {
    ScopedPhase phase(result.times, "image_encode", dev);
    OMNI_CHECK(req.image.dim() == 4 && req.image.size(2) == video.height && req.image.size(3) == video.width,
               "reference image of shape ", req.image.sizes(), " is not [1, 3, ", video.height, ", ", video.width, "]");
    state.ref_latents = encode_normalized(req.image.to(dev, at::kFloat).to(vae_dtype).to(at::kFloat).unsqueeze(2),
                                          req.keep_tensors ? "reference_latents" : nullptr, result);
    last_frames = at::zeros({1, 3, kS2VMotionFrames, video.height, video.width},
                            at::TensorOptions().dtype(vae_dtype).device(dev));
    if (video.start_from_ref) {
      const at::Tensor ref = req.image.to(dev, at::kFloat).to(vae_dtype).unsqueeze(2);  // [1, 3, 1, H, W]
      last_frames.narrow(2, kS2VMotionFrames - kS2VReferenceMotionFrames, kS2VReferenceMotionFrames)
          .copy_(ref.expand({1, 3, kS2VReferenceMotionFrames, video.height, video.width}));
    }
    state.motion_latents = encode_normalized(last_frames.to(at::kFloat), nullptr, result);
  }
  const auto model_dtype = settings_.dtype;
  state.ref_latents = state.ref_latents.to(vae_dtype).to(model_dtype);

  // The clips: each draws its noise from a generator seeded seed + r, denoises from a fresh schedule conditioned on
  // the reference, the motion latents, its pose and its audio slots, and is decoded behind the motion latents
  // (the first, but with start_from_ref: behind the reference's latent, its first 3 frames dropped).
  const int clips = static_cast<int>(video.speech_clips);
  result.segments = clips;
  // A stopped run's finished clips: their frames and the last 73 frames made, on every rank of the group; the
  // next clip's motion latents are encoded from those as a run that did not stop encodes them.
  at::Tensor kept_tail;
  const int resumed = resume_animate(req, clips, kept_tail, result);
  if (resumed > 0) {
    last_frames = kept_tail.to(dev).to(vae_dtype);
    ScopedPhase phase(result.times, "image_encode", dev);
    state.motion_latents = encode_normalized(last_frames.to(at::kFloat), nullptr, result);
  }
  const double shift = settings_.flow_shift.value_or(scheduler_config_.value("flow_shift", 3.0));
  for (int r = resumed; r < clips; ++r) {
    auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(video.seed + r));
    at::Tensor latents =
        at::randn({1, shape.channels, shape.frames, shape.height, shape.width}, gen, at::TensorOptions(at::kFloat))
            .to(dev);
    keep(numbered("clip", r) + ".init_latents", latents);
    {
      ScopedPhase phase(result.times, "image_encode", dev);
      if (req.pose) {
        // load_pose_cond: the clip's pose frames behind a copy of its first, encoded, the first latent dropped.
        const at::Tensor pose = req.pose(r * frames, frames).to(dev, at::kFloat);  // [1, 3, F, H, W]
        OMNI_CHECK(
            pose.dim() == 5 && pose.size(2) == frames && pose.size(3) == video.height && pose.size(4) == video.width,
            "pose frames of shape ", pose.sizes(), " are not ", frames, " frames of ", video.height, "x", video.width);
        const at::Tensor clip = at::cat({pose.narrow(2, 0, 1), pose}, 2).to(vae_dtype).to(at::kFloat);
        state.cond_states = encode_normalized(clip, nullptr, result).narrow(2, 1, shape.frames);
      } else {
        // Wan2.2: the VAE's latents of a -1 clip times 0.
        state.cond_states = at::zeros({1, shape.channels, shape.frames, shape.height, shape.width},
                                      at::TensorOptions().dtype(at::kFloat).device(dev));
      }
      state.cond_states = state.cond_states.to(vae_dtype).to(model_dtype);
    }
    state.motion_latents = state.motion_latents.to(vae_dtype).to(model_dtype);
    state.audio = audio.narrow(3, r * frames, frames);        // [1, 25, A, F]
    const bool drop_first = r == 0 && !video.start_from_ref;  // Wan2.2's drop_first_motion and r == 0
    state.drop_motion = drop_first;
    keep(numbered("clip", r) + ".motion_latents", state.motion_latents);
    keep(numbered("clip", r) + ".cond_states", state.cond_states);

    auto scheduler = sched::make_wan_scheduler(settings_.sample_solver, shift);
    scheduler->set_timesteps(video.num_inference_steps, dev);
    const std::vector<int64_t> timesteps = scheduler->timestep_values();
    state.step_base = r * static_cast<int>(timesteps.size());
    StepInfo clip_step{};
    clip_step.segment = r;
    clip_step.num_segments = clips;
    latents = denoise(
        latents, timesteps, *scheduler,
        [&](const at::Tensor& x, int64_t t) {
          ModelInput in;
          in.x = x.to(model_dtype);
          in.timestep = at::full({1}, t, at::TensorOptions().dtype(at::kLong).device(dev));
          return in;
        },
        embeds, state, req, on_step, clip_step, result);
    result.denoise_peak_bytes = std::max(result.denoise_peak_bytes, peak_since_reset(dev));
    keep(numbered("clip", r) + ".latents", latents);

    // Decode behind the motion latents (the first clip, but with start_from_ref: the reference's), keep the clip's
    // last F frames (that first: 3 fewer); the last 73 frames made so far are the next clip's motion, on every rank
    // of the group.
    pool_->clear();
    const at::Tensor head = drop_first ? state.ref_latents : state.motion_latents;
    at::Tensor decoded = decode_video(req, at::cat({head.to(at::kFloat), latents.to(at::kFloat)}, 2), result);
    const int64_t kept = frames - (r == 0 ? video.s2v_dropped_frames() : 0);
    if (decoded.defined()) decoded = decoded.narrow(2, decoded.size(2) - kept, kept);  // [1, 3, kept, H, W]
    if (r + 1 < clips) {
      const int64_t overlap = std::min(kS2VMotionFrames, kept);
      const at::Tensor tail = share_tail(req, decoded, kept, overlap);  // [1, 3, overlap, H, W]
      last_frames = at::cat({last_frames.narrow(2, overlap, kS2VMotionFrames - overlap), tail.to(vae_dtype)}, 2);
      ScopedPhase phase(result.times, "image_encode", dev);
      state.motion_latents = encode_normalized(last_frames.to(at::kFloat), nullptr, result);
    }
    if (req.decode) keep_frames(req, decoded, result);
    if (req.decode && req.animate_checkpoint && r + 1 < clips)
      req.animate_checkpoint({r + 1, result.frames, last_frames.to(at::kCPU, at::kFloat)});
    dist::reset_peak_device_bytes(dev);
    reset_peak_rss();
  }
  return result;
}

}  // namespace omni::pipeline
