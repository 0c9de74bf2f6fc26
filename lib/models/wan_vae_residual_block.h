// WanResidualBlock (diffusers autoencoder_kl_wan.py): shortcut + conv2(SiLU(norm2(conv1(SiLU(norm1(x)))))),
// both 3x3x3 convolutions causal and cached. The shortcut is a 1x1x1 conv when the channel count changes.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_vae_causal_conv3d.h"
#include "models/wan_vae_rms_norm.h"

namespace omni::models {

class WanResidualBlock : public Module {
 public:
  WanResidualBlock(int64_t in_dim, int64_t out_dim);
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache) const;  // takes 2 cache slots

 private:
  WanRMSNorm* norm1_;
  WanCausalConv3d* conv1_;
  WanRMSNorm* norm2_;
  WanCausalConv3d* conv2_;
  WanCausalConv3d* conv_shortcut_ = nullptr;
};

}  // namespace omni::models
