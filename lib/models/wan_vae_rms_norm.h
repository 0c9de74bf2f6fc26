// WanRMS_norm (diffusers autoencoder_kl_wan.py): channel-first L2 normalization, then * sqrt(C) * gamma.
//
// Unlike the transformer's RMSNorm this is F.normalize over the channel axis (x / max(||x||_2, 1e-12)),
// computed in the input's dtype; the checkpoints carry no bias (diffusers' bias=False adds 0.0).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"

namespace omni::models {

class WanRMSNorm : public Module {
 public:
  // images: gamma [C, 1, 1] for [N, C, H, W] inputs; otherwise gamma [C, 1, 1, 1] for [B, C, T, H, W].
  WanRMSNorm(int64_t dim, bool images);
  at::Tensor forward(const at::Tensor& x) const;

 private:
  double scale_;
  at::Tensor* gamma_;
};

}  // namespace omni::models
