#include "job/conditioning_inputs.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include "core/error.h"
#include "io/audio_reader.h"
#include "io/image_reader.h"
#include "io/video_reader.h"
#include "job/video_list.h"
#include "pipeline/animate_condition.h"

namespace omni::job {
namespace {

template <typename Load>
const at::Tensor& cached(std::string key, at::Tensor& tensor, std::string& have, Load load) {
  if (key != have) tensor = load();
  have = std::move(key);
  return tensor;
}

}  // namespace

void ConditioningInputs::fill(const config::GenerateOptions& o, pipeline::GenerationRequest& req) {
  const int h = o.height, w = o.width;
  // Each image read once (its pixels as load_image gives them, for the CLIP encoder), then resized.
  if (req.video.animate) return fill_animate(o, req);
  if (req.video.speech) return fill_speech(o, req);
  if (!o.image.empty()) {
    req.image_pixels = cached(o.image, first_read_.tensor, first_read_.key, [&] { return io::read_image(o.image); });
    req.image = cached(str_cat(o.image, "@", h, "x", w), first_.tensor, first_.key,
                       [&] { return io::conditioning_image(req.image_pixels, h, w); });  // [1, 3, H, W]
  }
  if (!o.last_image.empty()) {
    req.last_image_pixels =
        cached(o.last_image, last_read_.tensor, last_read_.key, [&] { return io::read_image(o.last_image); });
    req.last_image = cached(str_cat(o.last_image, "@", h, "x", w), last_.tensor, last_.key,
                            [&] { return io::conditioning_image(req.last_image_pixels, h, w); });
  }
  const int frames = req.video.rounded_num_frames(temporal_factor_);
  // A clip's frames, read and resized once per file and size; `finish` is applied to them before they are kept.
  auto clip = [&](const std::string& path, Cached& c, const std::function<at::Tensor(at::Tensor)>& finish) {
    return cached(str_cat(path, "@", frames, "x", h, "x", w), c.tensor, c.key,
                  [&] { return finish(io::load_conditioning_video(path, frames, h, w)); });  // [1, 3, F, H, W]
  };
  const auto as_read = [](at::Tensor t) { return t; };  // in [-1, 1]
  if (!o.video.empty()) req.clip = clip(o.video, clip_, as_read);
  // VACE (WanVACEPipeline.preprocess_conditions): the control video and the mask as video_processor.preprocess_video
  // gives them at the video's size (job::check_inputs made the control video's own rule agree with it), the mask
  // taken back to [0, 1] as diffusers does ((x + 1) / 2, clamped).
  if (!o.control_video.empty()) req.control_video = clip(o.control_video, control_, as_read);
  if (!o.mask_video.empty())
    req.mask_video = clip(o.mask_video, mask_, [](at::Tensor t) { return t.add_(1).div_(2).clamp_(0, 1); });
  references_.resize(std::max(references_.size(), o.reference_images.size()));
  req.reference_images.clear();
  for (size_t i = 0; i < o.reference_images.size(); ++i) {
    const std::string& path = o.reference_images[i];
    req.reference_images.push_back(
        cached(str_cat(path, "@", h, "x", w), references_[i].tensor, references_[i].key, [&] {
          return io::vace_reference_image(io::read_image(path), h, w, vae_factor_, path);  // [3, H, W]
        }));
  }
  req.conditioning_scale = o.conditioning_scale;
}

void ConditioningInputs::fill_speech(const config::GenerateOptions& o, pipeline::GenerationRequest& req) {
  const int h = o.height, w = o.width;
  req.image_pixels = cached(o.image, first_read_.tensor, first_read_.key, [&] { return io::read_image(o.image); });
  req.image = cached(str_cat(o.image, "@s2v", h, "x", w), first_.tensor, first_.key,
                     [&] { return io::s2v_reference_image(req.image_pixels, h, w); });  // [1, 3, H, W]
  req.speech = io::load_audio(o.audio, 16000, speech_span(o)).samples;
  if (o.pose_video.empty()) return;
  // The pose video a clip at a time (load_pose_cond's frames: every round(fps / 16)th from frame 0, then -1 frames).
  const std::string pose = o.pose_video;
  const int64_t total = io::video_packet_count(pose);
  const double fps = io::video_frame_rate(pose);
  // Python's round (half to even) of the rate ratio, at least 1.
  const int64_t interval =
      std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(fps / static_cast<double>(pipeline::kS2VFps))));
  req.pose = [=](int64_t first, int64_t count) {
    at::Tensor out = at::full({1, 3, count, h, w}, -1.0f);
    const int64_t src_first = first * interval;
    const int64_t taken = std::max<int64_t>(0, std::min(count, (total - src_first + interval - 1) / interval));
    if (taken > 0) {
      const int64_t span = (taken - 1) * interval + 1;
      const at::Tensor levels = io::read_video_range(pose, src_first, span).frames;  // [span, h0, w0, 3]
      const at::Tensor picked = levels.slice(0, 0, span, interval);                  // [taken, h0, w0, 3]
      out.narrow(2, 0, taken).copy_(io::s2v_pose_frames(picked.contiguous(), h, w));
    }
    return out;
  };
}

void ConditioningInputs::fill_animate(const config::GenerateOptions& o, pipeline::GenerationRequest& req) {
  const int h = o.height, w = o.width;
  // The character: as read for CLIP, placed on the video's canvas for the VAE.
  req.image_pixels = cached(o.image, first_read_.tensor, first_read_.key, [&] { return io::read_image(o.image); });
  req.image = cached(str_cat(o.image, "@fill", h, "x", w), first_.tensor, first_.key,
                     [&] { return io::animate_character_image(req.image_pixels, h, w); });  // [1, 3, H, W]
  // The videos a segment at a time (the memory of one segment, whatever the video's length): each padded frame
  // from its reflected source frame, resized as diffusers' processors resize them.
  const int64_t n = req.video.animate_frames, face = face_size_;
  OMNI_CHECK(n > 0 && face > 0, "Animate inputs before check_inputs read the pose video's length");
  const bool replace = req.video.replace;
  const std::string pose = o.pose_video, faces = o.face_video, background = o.background_video, mask = o.mask_video;
  req.animate_frames = [=](int64_t first, int64_t count) {
    std::vector<int64_t> frames;
    for (int64_t j = first; j < first + count; ++j) frames.push_back(pipeline::reflected_frame(j, n));
    pipeline::AnimateFrames in;
    in.pose = io::load_video_frames(pose, frames, h, w);
    in.face = io::load_video_frames(faces, frames, face, face);
    if (replace) {
      in.background = io::load_video_frames(background, frames, h, w);
      in.mask = io::load_video_frames(mask, frames, h, w, /*luma=*/true);
    }
    return in;
  };
}

}  // namespace omni::job
