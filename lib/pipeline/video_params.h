// One description of a video's sampling: what the request (WanPipeline::generate), the memory planner and the
// layout chooser read. It owns the rules every one of them applies: whether classifier-free guidance runs and
// how many frames and latent frames the video has.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>

namespace omni::pipeline {

// Wan2.2-S2V (wan/speech2video.py): the pixel frames of motion each clip continues from (motion_frames), and the
// first frames of the first clip that are dropped (its decode starts with the reference image's latent frame).
constexpr int64_t kS2VMotionFrames = 73;
constexpr int64_t kS2VDroppedFrames = 3;
constexpr int64_t kS2VReferenceMotionFrames = 6;  // start_from_ref: the motion frames the reference image fills
constexpr int64_t kS2VFps = 16;  // sample_fps: the audio is bucketed per frame at this rate, the video written at it

struct VideoParams {
  int height = 0;
  int width = 0;
  int num_frames = 0;  // as asked; the video has rounded_num_frames()
  int num_inference_steps = 0;
  double guidance_scale = 1.0;
  std::optional<double> guidance_scale_2;  // the second expert's scale; unset: guidance_scale
  int64_t seed = 0;
  int max_sequence_length = 512;
  bool image = false;       // image-conditioned (I2V, TI2V's image mode): the VAE encodes a clip first
  bool last_image = false;  // with `image`, the last frame too (first-last-frame video; I2V models)
  bool video = false;       // video-to-video: the denoising starts from the VAE-encoded clip, noised
  double strength = 1.0;    // with `video`: the fraction of the schedule that runs
  // VACE (WanVACEPipeline): the reference images, each one latent frame denoised before the video's (diffusers
  // draws the noise for num_frames + 4 x references frames) and cut off before decoding.
  int reference_images = 0;
  bool control_video = false;  // VACE: a control video is given (else diffusers' grey clip)
  bool mask_video = false;     // VACE: with it, a mask (else all white)
  // Wan2.2-Animate (WanAnimatePipeline): the video is the pose video's length (`animate_frames`), made in
  // segments of num_frames frames (diffusers' segment_frame_length, rounded as num_frames is), each after the
  // first conditioned on the last `prev_segment_frames` frames of the one before. Every segment denoises one
  // latent frame more, the character image's, first.
  bool animate = false;
  // Wan2.2-S2V (WanS2VPipeline, --audio): clips of num_frames frames (Wan2.2's infer_frames, a multiple of the
  // VAE's temporal factor), each after the first continued from the one before's last motion_frames frames; the
  // first loses its first 3 frames (drop_first_motion). The recording's samples are the request's.
  bool speech = false;
  int64_t speech_clips = 0;
  // generate.py --start_from_ref (init_first_frame): the reference image stands in the last motion frames of the
  // first clip, which keeps its motion tokens and all its frames.
  bool start_from_ref = false;
  bool replace = false;         // --animate-mode replace: a background video and its mask
  int64_t animate_frames = 0;   // the pose video's frames: the video's
  int prev_segment_frames = 1;  // diffusers' prev_segment_conditioning_frames

  // diffusers' do_classifier_free_guidance: the first scale above 1 (the second expert follows the first's
  // decision, with its own scale).
  bool guidance_on() const { return guidance_scale > 1.0; }
  // The frames the video has, temporal_factor * k + 1: diffusers' num_frames // t * t + 1 where num_frames is
  // not of that form already (so 12 frames become 13 with the VAE's factor 4, and 10 become 9).
  int rounded_num_frames(int64_t temporal_factor) const {
    const auto t = static_cast<int>(temporal_factor);
    return num_frames % t == 1 ? num_frames : num_frames / t * t + 1;
  }
  // The first step of the schedule that runs: diffusers' get_timesteps, N - min(int(N * strength), N) with a
  // video (the truncation in double, as Python's int()), else 0. The steps before it are never run.
  int first_step() const {
    if (!video) return 0;
    return num_inference_steps - std::min(static_cast<int>(num_inference_steps * strength), num_inference_steps);
  }
  int steps_run() const { return num_inference_steps - first_step(); }
  // Latent frames: the first frame alone, then one per temporal_factor frames.
  int64_t latent_frames(int64_t temporal_factor) const {
    return (rounded_num_frames(temporal_factor) - 1) / temporal_factor + 1;
  }
  // The latent frames the transformer denoises: the video's (Animate: a segment's), after VACE's reference frames
  // or Animate's character frame.
  int64_t denoised_latent_frames(int64_t temporal_factor) const {
    if (speech) return num_frames / temporal_factor;  // S2V: (infer_frames + 3 + 73) / 4 - 19
    return latent_frames(temporal_factor) + reference_images + (animate ? 1 : 0);
  }

  // Animate's segments (Wan2.2's animate.py; diffusers' WanAnimatePipeline counts one too many where a segment is
  // at most twice its conditioning frames and then fails): segment k covers the padded frames [k E, k E + L),
  // L = rounded_num_frames, E = L - prev_segment_frames frames new in each; as many as cover the video, and one
  // at least.
  int64_t segment_stride(int64_t temporal_factor) const {
    return rounded_num_frames(temporal_factor) - prev_segment_frames;
  }
  int64_t segments(int64_t temporal_factor) const {
    if (speech) return speech_clips;
    if (!animate) return 1;
    const int64_t stride = segment_stride(temporal_factor), rest = animate_frames - prev_segment_frames;
    return rest <= 0 ? 1 : (rest + stride - 1) / stride;
  }
  // The first clip's frames S2V drops: the 3 the reference's latent frame leads its decode with, none with
  // start_from_ref (decoded behind the motion latents as every later clip).
  int64_t s2v_dropped_frames() const { return start_from_ref ? 0 : kS2VDroppedFrames; }
  // The frames the first `done` segments (S2V: clips) leave: Animate's first segment's, then each later one's new
  // ones; S2V's clips', the first s2v_dropped_frames() fewer.
  int64_t frames_of_segments(int64_t done, int64_t temporal_factor) const {
    if (speech) return done * num_frames - s2v_dropped_frames();
    return rounded_num_frames(temporal_factor) + (done - 1) * segment_stride(temporal_factor);
  }
  // The decoded frames a segment hands the next (Animate: prev_segment_frames; S2V: the motion frames).
  int64_t carried_frames() const { return speech ? kS2VMotionFrames : prev_segment_frames; }
  // The frames of the video written: the pose video's (Animate), S2V's clips' (less s2v_dropped_frames()), else
  // rounded_num_frames.
  int64_t output_frames(int64_t temporal_factor) const {
    if (speech) return speech_clips * num_frames - s2v_dropped_frames();
    return animate ? animate_frames : rounded_num_frames(temporal_factor);
  }
};

}  // namespace omni::pipeline
