#include "models/wan_vae_rms_norm.h"

#include <cmath>

namespace omni::models {

WanRMSNorm::WanRMSNorm(int64_t dim, bool images) : scale_(std::sqrt(static_cast<double>(dim))) {
  gamma_ = images ? &param("gamma", {dim, 1, 1}) : &param("gamma", {dim, 1, 1, 1});
}

at::Tensor WanRMSNorm::forward(const at::Tensor& x) const {
  // F.normalize(x, dim=1): the norm is clamped below at 1e-12, then broadcast over the channels.
  at::Tensor denom = at::norm(x, 2, {1}, /*keepdim=*/true).clamp_min(1e-12);
  return (x / denom).mul_(scale_).mul_(*gamma_);
}

}  // namespace omni::models
