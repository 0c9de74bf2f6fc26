#include "pipeline/animate_condition.h"

#include "core/error.h"

namespace omni::pipeline {

int64_t reflected_frame(int64_t j, int64_t n) {
  OMNI_CHECK(n >= 1 && j >= 0, "reflected_frame(", j, ", ", n, ")");
  if (n == 1) return 0;
  const int64_t r = j % (2 * (n - 1));  // one period: forward n - 1 frames, back n - 1
  return r < n ? r : 2 * (n - 1) - r;
}

at::Tensor animate_latent_mask(const at::Tensor& pixels, int64_t latent_frames, int64_t height, int64_t width,
                               int64_t mask_len, int64_t temporal_factor, const at::TensorOptions& options) {
  const int64_t tf = temporal_factor, frames = (latent_frames - 1) * tf + 1;
  at::Tensor m = pixels.defined() ? pixels.to(options).clone() : at::zeros({1, 1, frames, height, width}, options);
  OMNI_CHECK(m.dim() == 5 && m.size(1) == 1 && m.size(2) == frames && m.size(3) == height && m.size(4) == width,
             "Animate mask of shape ", m.sizes(), " is not [1, 1, ", frames, ", ", height, ", ", width, "]");
  if (mask_len > 0) m.narrow(2, 0, mask_len).fill_(1.0);
  // The first frame stands for a whole latent frame: tf copies, then one latent frame per tf pixel frames.
  m = at::cat({m.narrow(2, 0, 1).expand({1, 1, tf, height, width}), m.narrow(2, 1, frames - 1)}, 2);  // [1,1,T tf,h,w]
  return m.view({1, latent_frames, tf, height, width}).transpose(1, 2).contiguous();  // [1, tf, T, h, w]
}

at::Tensor animate_background_mask(const at::Tensor& mask, int64_t height, int64_t width) {
  OMNI_CHECK(mask.dim() == 5 && mask.size(0) == 1 && mask.size(1) == 1,
             "Animate replace mask must be [1, 1, F, H, "
             "W], got ",
             mask.sizes());
  const at::Tensor frames = (1 - mask)[0].transpose(0, 1);                              // [F, 1, H, W]
  return at::upsample_nearest2d(frames, {height, width}).transpose(0, 1).unsqueeze(0);  // [1, 1, F, h, w]
}

}  // namespace omni::pipeline
