#include "job/conditioning_inputs.h"

#include "core/error.h"
#include "io/image_reader.h"
#include "io/video_reader.h"

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
  if (!o.video.empty()) {
    const int frames = req.video.rounded_num_frames(temporal_factor_);
    req.clip = cached(str_cat(o.video, "@", frames, "x", h, "x", w), clip_.tensor, clip_.key,
                      [&] { return io::load_conditioning_video(o.video, frames, h, w); });  // [1, 3, F, H, W]
  }
}

}  // namespace omni::job
