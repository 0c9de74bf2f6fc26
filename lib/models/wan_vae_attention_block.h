// WanAttentionBlock (diffusers autoencoder_kl_wan.py): single-head self-attention over the pixels of each
// frame separately (no attention across time), with an RMS norm in front and a residual connection.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_vae_causal_conv3d.h"
#include "models/wan_vae_rms_norm.h"

namespace omni::models {

class WanAttentionBlock : public Module {
 public:
  explicit WanAttentionBlock(int64_t dim);
  at::Tensor forward(const at::Tensor& x) const;  // [B, C, T, H, W] -> same

 private:
  WanRMSNorm* norm_;
  WanConv2d* to_qkv_;
  WanConv2d* proj_;
};

}  // namespace omni::models
