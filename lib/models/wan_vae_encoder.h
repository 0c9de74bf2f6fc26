// WanEncoder3d and WanResidualDownBlock (diffusers autoencoder_kl_wan.py).
//
// Wan2.1 (is_residual false): down_blocks is a flat list of residual blocks and resamplers
// (down_blocks.<i> in that order). Wan2.2 (is_residual true): one WanResidualDownBlock per level, whose
// residual blocks and downsampler get a parameter-free AvgDown3D shortcut around them.
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

class WanResidualDownBlock : public Module {
 public:
  WanResidualDownBlock(int64_t in_dim, int64_t out_dim, int64_t num_res_blocks, bool temporal_downsample,
                       bool down_flag);
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache) const;

 private:
  int64_t out_dim_;
  int64_t factor_t_;
  int64_t factor_s_;
  std::vector<WanResidualBlock*> resnets_;
  WanResample* downsampler_ = nullptr;
};

struct WanEncoderConfig {
  int64_t in_channels = 3;
  int64_t dim = 96;
  int64_t out_channels = 32;  // 2 * z_dim: mean and log-variance
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<bool> temporal_downsample{false, true, true};
  bool is_residual = false;
};

class WanEncoder3d : public Module {
 public:
  explicit WanEncoder3d(const WanEncoderConfig& config);
  // One chunk of frames [B, Cin, T, H, W] -> [B, 2z, T', H / 2^L, W / 2^L], continuing the clip held in `cache`
  // (the caller calls cache.begin_chunk() before each chunk and cache.reset() before each clip).
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache) const;

 private:
  // A Wan2.1 down_blocks entry is a residual block or a resampler.
  struct Layer {
    WanResidualBlock* resnet = nullptr;
    WanResample* resample = nullptr;
    WanResidualDownBlock* residual_down = nullptr;
  };
  WanCausalConv3d* conv_in_;
  std::vector<Layer> down_blocks_;
  WanMidBlock* mid_block_;
  WanRMSNorm* norm_out_;
  WanCausalConv3d* conv_out_;
};

}  // namespace omni::models
