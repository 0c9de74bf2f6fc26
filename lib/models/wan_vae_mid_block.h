// WanMidBlock (diffusers autoencoder_kl_wan.py): residual block, per-frame attention, residual block.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_vae_attention_block.h"
#include "models/wan_vae_causal_conv3d.h"
#include "models/wan_vae_residual_block.h"

namespace omni::models {

class WanMidBlock : public Module {
 public:
  explicit WanMidBlock(int64_t dim);
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache) const;

 private:
  WanResidualBlock* resnet0_;
  WanAttentionBlock* attention_;
  WanResidualBlock* resnet1_;
};

}  // namespace omni::models
