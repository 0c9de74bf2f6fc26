// diffusers' WanAnimatePipeline.__call__ (Wan2.2-Animate), as a WanPipeline member: the character image animated
// by a pose and a face video, or replacing the person of a background video, made segment by segment.
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/tensor_dump.h"
#include "dist/device.h"
#include "models/hsdp_sharding.h"
#include "pipeline/animate_condition.h"
#include "pipeline/pipeline_tensors.h"
#include "pipeline/wan_pipeline.h"
#include "sched/scheduler.h"

namespace omni::pipeline {
namespace {

// The StepInfo that carries a segment's place (its steps fill in the rest).
StepInfo animate_step(int segment, int segments) {
  StepInfo s{};
  s.segment = segment;
  s.num_segments = segments;
  return s;
}

}  // namespace

GenerationResult WanPipeline::generate_animate(const GenerationRequest& req, const StepCallback& on_step) {
  GenerationResult result;
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const int tf = temporal_factor();
  OMNI_CHECK(req.image.defined() && req.image_pixels.defined() && req.animate_frames,
             "GenerationRequest: an Animate video needs the character image, its pixels and the segments' frames");
  OMNI_CHECK(!video.video && !video.last_image && video.reference_images == 0,
             "GenerationRequest: an Animate video takes no other conditioning");
  auto keep = [&](const std::string& name, const at::Tensor& t) {
    if (req.keep_tensors) result.tensors.emplace_back(name, to_float_cpu(t));
  };
  dist::reset_peak_device_bytes(dev);
  reset_peak_rss();

  // 1. The prompts; 4. the character image: its CLIP states, and its latents behind four mask channels of ones
  // (prepare_reference_image_latents: the image is known), the first latent frame of every segment's condition.
  const Embeds embeds = encode_prompt_embeds(req, result);
  const LatentShape shape = latent_shape(video);  // a segment's latent frames and the character's, first
  const int64_t frames = video.rounded_num_frames(tf), latent_frames = shape.frames - 1;
  const int64_t prev = video.prev_segment_frames, stride = video.segment_stride(tf);
  const int segments = static_cast<int>(video.segments(tf));
  const auto vae_dtype = settings_.vae_dtype;
  // The VAE's normalized mean as diffusers leaves it: in the VAE's dtype.
  auto encoded = [&](const at::Tensor& pixels, const char* keep_as) {
    return encode_normalized(pixels, req.keep_tensors ? keep_as : nullptr, result).to(vae_dtype).to(at::kFloat);
  };
  CallState state;
  state.image_states = encode_image_states(req, result);
  at::Tensor reference;  // [1, tf + z, 1, h, w]
  {
    ScopedPhase phase(result.times, "image_encode", dev);
    OMNI_CHECK(req.image.dim() == 4 && req.image.size(2) == video.height && req.image.size(3) == video.width,
               "character image of shape ", req.image.sizes(), " is not [1, 3, ", video.height, ", ", video.width, "]");
    keep("character_image", req.image);
    const at::Tensor z = encoded(req.image.to(dev, at::kFloat).unsqueeze(2), "reference_latents");
    const at::Tensor mask = animate_latent_mask(at::Tensor(), 1, shape.height, shape.width, 1, tf, z.options());
    reference = at::cat({mask, z}, 1);
  }
  if (image_encoder_sharded_) image_encoder_sharded_->settle_timings();

  // 8. The segments: each draws its noise from the one generator (diffusers' prepare_latents per segment), is
  // conditioned on the character, its pose and face frames and the previous segment's last frames, denoised
  // from a fresh schedule, and decoded without the character's latent frame.
  auto gen = at::detail::createCPUGenerator(static_cast<uint64_t>(video.seed));
  const auto f32 = at::TensorOptions().dtype(at::kFloat).device(dev);
  at::Tensor tail;  // the previous segment's last `prev` decoded frames [1, 3, prev, H, W] in [-1, 1]
  // A stopped run's finished segments: their frames and the last one's tail, on every rank of the group.
  result.segments = segments;
  const int resumed = resume_animate(req, segments, tail, result);
  for (int k = 0; k < segments; ++k) {
    const int64_t start = k * stride;
    // Every segment's noise is drawn, a finished one's too: the generator moves on as in a run that did not stop.
    const at::Tensor noise =
        at::randn({1, shape.channels, shape.frames, shape.height, shape.width}, gen, at::TensorOptions(at::kFloat));
    if (k < resumed) continue;
    if (k == 0) keep("init_latents", noise);
    at::Tensor latents = noise.to(dev);
    if (step_cache_) step_cache_->reset();
    at::Tensor condition;  // [1, tf + z, 1 + T, h, w]: the character's latent frame, then the segment's
    {
      ScopedPhase phase(result.times, "image_encode", dev);
      const AnimateFrames in = req.animate_frames(start, frames);
      const std::vector<int64_t> clip_shape = {1, 3, frames, video.height, video.width};
      OMNI_CHECK(in.pose.sizes() == at::IntArrayRef(clip_shape), "pose frames of shape ", in.pose.sizes(), " are not ",
                 at::IntArrayRef(clip_shape));
      OMNI_CHECK(in.face.dim() == 5 && in.face.size(2) == frames, "face frames of shape ", in.face.sizes(), " are not ",
                 frames, " frames");
      OMNI_CHECK(video.replace == (in.background.defined() && in.mask.defined()),
                 "replace mode needs the background and mask frames, animate mode neither");
      // prepare_pose_latents; the transformer adds them to every latent frame but the character's.
      state.pose = encoded(in.pose.to(dev, at::kFloat), nullptr).to(settings_.dtype);
      state.face = in.face.to(dev, at::kFloat).to(settings_.dtype);
      // prepare_prev_segment_cond_latents: the conditioning clip is the previous segment's last frames (the first
      // segment: the background's first frames, or zeros), then the background (or zeros); the mask is 1 on
      // those frames after the first segment, and in replace mode 1 where the background is kept.
      at::Tensor head;
      if (k > 0) {
        head = tail;
      } else if (video.replace) {
        head = in.background.narrow(2, 0, prev);
      } else {
        head = at::zeros({1, 3, prev, video.height, video.width}, f32);
      }
      const at::Tensor rest = video.replace ? in.background.narrow(2, prev, frames - prev).to(dev, at::kFloat)
                                            : at::zeros({1, 3, frames - prev, video.height, video.width}, f32);
      const at::Tensor clip = at::cat({head.to(dev, at::kFloat).to(vae_dtype).to(at::kFloat), rest}, 2);
      const at::Tensor z = encoded(clip, nullptr);  // [1, z, T, h, w]
      const at::Tensor kept = video.replace
                                  ? animate_background_mask(in.mask.to(dev, at::kFloat), shape.height, shape.width)
                                  : at::Tensor();
      const at::Tensor mask =
          animate_latent_mask(kept, latent_frames, shape.height, shape.width, k > 0 ? prev : 0, tf, z.options());
      condition = at::cat({reference, at::cat({mask, z}, 1)}, 2);
      if (req.keep_tensors) result.tensors.emplace_back(numbered("seg", k) + ".condition", to_float_cpu(condition));
    }
    // A fresh schedule per segment (diffusers resets the scheduler's timesteps and state).
    auto scheduler =
        sched::make_scheduler(scheduler_config_, settings_.sample_solver, settings_.flow_shift, scheduler_source_);
    scheduler->set_timesteps(video.num_inference_steps, dev);
    const std::vector<int64_t> timesteps = scheduler->timestep_values();
    state.step_base = k * static_cast<int>(timesteps.size());
    const at::Tensor input_condition = condition.to(settings_.dtype);
    latents = denoise(
        latents, timesteps, *scheduler,
        [&](const at::Tensor& x, int64_t t) {
          ModelInput in;
          in.x = at::cat({x.to(settings_.dtype), input_condition}, 1);  // [1, 2 z + tf, 1 + T, h, w]
          in.timestep = at::full({1}, t, at::TensorOptions().dtype(at::kLong).device(dev));
          return in;
        },
        embeds, state, req, on_step, animate_step(k, segments), result);
    result.denoise_peak_bytes = std::max(result.denoise_peak_bytes, peak_since_reset(dev));
    if (step_cache_)
      for (int e = 0; e < 2; ++e) result.step_cache[e] += step_cache_->counts(e);

    // Decode the segment's frames (not the character's latent frame); the next segment starts from its last
    // `prev` frames, on every rank of the video group. A segment after the first repeats the previous one's
    // last `prev` frames first: they are not the video's again.
    pool_->clear();
    at::Tensor decoded = decode_video(req, latents.narrow(2, 1, latent_frames), result);  // [1, 3, L, H, W]
    if (k + 1 < segments) tail = share_tail(req, decoded, frames, prev);
    if (req.decode) keep_frames(req, k > 0 ? decoded.narrow(2, prev, frames - prev) : decoded, result);
    if (req.decode && req.animate_checkpoint && k + 1 < segments)
      req.animate_checkpoint({k + 1, result.frames, tail.to(at::kCPU, at::kFloat)});
    dist::reset_peak_device_bytes(dev);
    reset_peak_rss();
  }
  // The padded frames past the pose video's end are not the video's.
  if (req.decode) {
    result.frames = result.frames.narrow(1, 0, video.animate_frames).contiguous();
    for (auto& [name, t] : result.tensors)
      if (name == "frames") t = t.narrow(1, 0, video.animate_frames).contiguous();
  }
  return result;
}

int WanPipeline::resume_animate(const GenerationRequest& req, int segments, at::Tensor& tail,
                                GenerationResult& result) {
  const at::Device dev = settings_.device;
  const VideoParams& video = req.video;
  const AnimateProgress& kept = req.animate_resume;
  // --save-tensors keeps every segment's tensors: those runs make the whole video.
  int done = req.decode && !req.keep_tensors ? std::min(kept.segments_done, segments - 1) : 0;
  if (done > 0) {
    OMNI_CHECK(kept.frames.defined() && kept.tail.defined() && kept.tail.size(2) == video.carried_frames(),
               "Animate / S2V progress without its frames or tail");
    result.frames = kept.frames;
    tail = kept.tail.to(dev).to(settings_.vae_dtype);
  }
  // The writing rank decides for its group (a repeat run's group resumes nothing, alike).
  if (video_group_ != nullptr && video_group_->size() > 1 && req.group_decodes) {
    at::Tensor n = at::full({1}, static_cast<int64_t>(done), at::TensorOptions().dtype(at::kLong).device(dev));
    video_group_->broadcast(n, 0)->wait();
    done = static_cast<int>(n.item<int64_t>());
    if (done > 0) {
      if (!req.decode)
        tail = at::empty({1, 3, video.carried_frames(), video.height, video.width},
                         at::TensorOptions().dtype(settings_.vae_dtype).device(dev));
      video_group_->broadcast(tail, 0)->wait();
    }
  }
  result.segments_reused = done;
  return done;
}

at::Tensor WanPipeline::share_tail(const GenerationRequest& req, const at::Tensor& decoded, int64_t frames,
                                   int64_t prev) {
  const at::Device dev = settings_.device;
  at::Tensor tail;
  if (decoded.defined()) {
    tail = decoded.narrow(2, frames - prev, prev).clone(at::MemoryFormat::Contiguous);  // keep_frames works in place
  } else {
    tail = at::zeros({1, 3, prev, req.video.height, req.video.width},
                     at::TensorOptions().dtype(settings_.vae_dtype).device(dev));
  }
  // The writing rank (rank 0 of the video group) decoded; the others take its frames. A repeat run's group
  // decodes nowhere (zeros: its frames are not written).
  if (video_group_ != nullptr && video_group_->size() > 1 && req.group_decodes)
    video_group_->broadcast(tail, 0)->wait();
  return tail;
}

}  // namespace omni::pipeline
