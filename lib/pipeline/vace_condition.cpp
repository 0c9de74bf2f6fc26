#include "pipeline/vace_condition.h"

#include "core/error.h"

namespace omni::pipeline {

at::Tensor vace_binary_mask(const at::Tensor& mask) {
  return (mask > 0.5).to(mask.scalar_type());
}

at::Tensor vace_latent_mask(const at::Tensor& mask, int64_t temporal_factor, int64_t spatial_factor,
                            int reference_images) {
  OMNI_CHECK(mask.dim() == 5 && mask.size(0) == 1, "VACE mask must be [1, C, F, H, W], got ", mask.sizes());
  const int64_t frames = mask.size(2), height = mask.size(3), width = mask.size(4), sf = spatial_factor;
  OMNI_CHECK(height % sf == 0 && width % sf == 0, "VACE mask of ", height, "x", width,
             " pixels is not a whole number of ", sf, "-pixel latent cells");
  const int64_t h = height / sf, w = width / sf;
  const int64_t latent_frames = (frames + temporal_factor - 1) / temporal_factor;
  at::Tensor m = mask[0][0].reshape({frames, h, sf, w, sf});        // [F, h, sf, w, sf]
  m = m.permute({2, 4, 0, 1, 3}).reshape({sf * sf, frames, h, w});  // [sf*sf, F, h, w]
  // F.interpolate(mode="nearest-exact") over (frames, h, w); only the frames change.
  m = at::_upsample_nearest_exact3d(m.unsqueeze(0), {latent_frames, h, w}, std::nullopt, std::nullopt, std::nullopt);
  if (reference_images > 0) m = at::cat({at::zeros({1, sf * sf, reference_images, h, w}, m.options()), m}, 2);
  return m;  // [1, sf*sf, R + T, h, w]
}

}  // namespace omni::pipeline
