// WanResample, AvgDown3D and DupUp3D (diffusers autoencoder_kl_wan.py): the VAE's 2x spatial (and, for the
// 3d modes, 2x temporal) down/upsampling, and the Wan2.2 parameter-free shortcuts that mirror it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_vae_causal_conv3d.h"

namespace omni::models {

enum class WanResampleMode { kUpsample2d, kUpsample3d, kDownsample2d, kDownsample3d };

class WanResample : public Module {
 public:
  // upsample_out_dim: output channels of the up modes' spatial conv (diffusers defaults it to dim / 2; the
  // Wan2.2 residual up blocks pass dim). Down modes keep dim channels.
  WanResample(int64_t dim, WanResampleMode mode, int64_t upsample_out_dim);

  // x [B, C, T, H, W] -> [B, C', T', H', W']. Upsample3d: T' = T on the first chunk (its time conv is skipped
  // and the slot marked), else 2T. Downsample3d: T' = T on the first chunk (its frames are only cached), else
  // (T + 1 - 3) / 2 + 1 over [previous last frame, chunk]. Takes one cache slot in the 3d modes.
  at::Tensor forward(const at::Tensor& x, WanFeatCache& cache) const;

 private:
  at::Tensor spatial(const at::Tensor& x) const;  // per frame: nearest x2 + conv, or pad + stride-2 conv

  WanResampleMode mode_;
  WanConv2d* resample_;  // "resample.1" (index 0 of diffusers' Sequential is the upsample / pad)
  WanCausalConv3d* time_conv_ = nullptr;
};

// AvgDown3D: space/time-to-channel rearrangement followed by a mean over channel groups. Front-pads time
// with zeros to a multiple of factor_t. [B, Cin, T, H, W] -> [B, Cout, ceil(T/ft), H/fs, W/fs].
at::Tensor wan_avg_down_3d(const at::Tensor& x, int64_t out_channels, int64_t factor_t, int64_t factor_s);

// DupUp3D: channel repetition then channel-to-space/time rearrangement; on the first chunk the first
// factor_t - 1 frames are dropped. [B, Cin, T, H, W] -> [B, Cout, T*ft (- (ft-1)), H*fs, W*fs].
at::Tensor wan_dup_up_3d(const at::Tensor& x, int64_t out_channels, int64_t factor_t, int64_t factor_s,
                         bool first_chunk);

}  // namespace omni::models
