// WanDecoder3d, WanUpBlock and WanResidualUpBlock (diffusers autoencoder_kl_wan.py).
//
// Wan2.1 (is_residual false): up blocks of residual blocks and an "upsamplers.0" resampler whose output has
// half the channels. Wan2.2 (is_residual true): residual up blocks whose resampler ("upsampler") keeps the
// channels, with a parameter-free DupUp3D shortcut around the whole block.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "models/module.h"
#include "models/wan_vae_causal_conv3d.h"
#include "models/wan_vae_mid_block.h"
#include "models/wan_vae_resample.h"
#include "models/wan_vae_residual_block.h"
#include "models/wan_vae_rms_norm.h"

namespace omni::models {

// Both up block kinds: resnets (num_res_blocks + 1), an optional resampler, and for the residual kind the
// DupUp3D shortcut.
class WanUpBlock : public Module {
 public:
  // mode: null for no resampling. residual: Wan2.2's WanResidualUpBlock layout and shortcut.
  WanUpBlock(int64_t in_dim, int64_t out_dim, int64_t num_res_blocks, const WanResampleMode* mode, bool residual);
  // first_chunk: the clip's first latent frame (DupUp3D drops its leading frames then).
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache, bool first_chunk) const;

 private:
  int64_t out_dim_;
  bool residual_;
  int64_t factor_t_ = 1;
  std::vector<WanResidualBlock*> resnets_;
  WanResample* upsampler_ = nullptr;
};

struct WanDecoderConfig {
  int64_t dim = 96;
  int64_t z_dim = 16;
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<bool> temporal_upsample{true, true, false};  // the encoder's list reversed
  int64_t out_channels = 3;
  bool is_residual = false;
};

class WanDecoder3d : public Module {
 public:
  explicit WanDecoder3d(const WanDecoderConfig& config);
  // One latent frame [B, z, 1, h, w] -> [B, Cout, 1 (first chunk) or 2^U, h * 2^L, w * 2^L], continuing the clip
  // held in `cache` (the caller calls cache.begin_chunk() before each chunk and cache.reset() per clip).
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache, bool first_chunk) const;

 private:
  WanCausalConv3d* conv_in_;
  WanMidBlock* mid_block_;
  std::vector<WanUpBlock*> up_blocks_;
  WanRMSNorm* norm_out_;
  WanCausalConv3d* conv_out_;
};

}  // namespace omni::models
