#include "models/wan_vae_decoder.h"

#include <string>

#include "core/error.h"

namespace omni::models {

WanUpBlock::WanUpBlock(int64_t in_dim, int64_t out_dim, int64_t num_res_blocks, const WanResampleMode* mode,
                       bool residual)
    : out_dim_(out_dim), residual_(residual) {
  int64_t current = in_dim;
  for (int64_t i = 0; i < num_res_blocks + 1; ++i) {
    resnets_.push_back(child("resnets." + std::to_string(i), std::make_unique<WanResidualBlock>(current, out_dim)));
    current = out_dim;
  }
  if (mode) {
    if (residual) {
      upsampler_ = child("upsampler", std::make_unique<WanResample>(out_dim, *mode, out_dim));
      factor_t_ = *mode == WanResampleMode::kUpsample3d ? 2 : 1;
    } else {
      upsampler_ = child("upsamplers.0", std::make_unique<WanResample>(out_dim, *mode, out_dim / 2));
    }
  }
}

at::Tensor WanUpBlock::forward(const at::Tensor& x, WanFeatCache& cache, bool first_chunk) const {
  at::Tensor y = x;
  for (const auto* resnet : resnets_) y = resnet->forward(y, cache);
  if (upsampler_) y = upsampler_->forward(y, cache);
  // Wan2.2: the shortcut exists only on resampling blocks (spatial factor 2, time factor 2 for upsample3d).
  if (residual_ && upsampler_) y = y.add_(wan_dup_up_3d(x, out_dim_, factor_t_, 2, first_chunk));
  return y;
}

WanDecoder3d::WanDecoder3d(const WanDecoderConfig& config) {
  using K = std::array<int64_t, 3>;
  const auto& mult = config.dim_mult;
  const size_t levels = mult.size();
  OMNI_CHECK(config.temporal_upsample.size() + 1 == levels, "WanDecoder3d: temporal_upsample needs ", levels - 1,
             " entries, got ", config.temporal_upsample.size());
  std::vector<int64_t> dims{config.dim * mult.back()};
  for (auto it = mult.rbegin(); it != mult.rend(); ++it) dims.push_back(config.dim * *it);

  conv_in_ =
      child("conv_in", std::make_unique<WanCausalConv3d>(config.z_dim, dims[0], K{3, 3, 3}, K{1, 1, 1}, K{1, 1, 1}));
  mid_block_ = child("mid_block", std::make_unique<WanMidBlock>(dims[0]));
  for (size_t i = 0; i < levels; ++i) {
    int64_t in_dim = dims[i];
    // Wan2.1's upsamplers halve the channels, so every block after the first starts from half.
    if (i > 0 && !config.is_residual) in_dim /= 2;
    const bool up_flag = i + 1 != levels;
    WanResampleMode mode =
        up_flag && config.temporal_upsample[i] ? WanResampleMode::kUpsample3d : WanResampleMode::kUpsample2d;
    up_blocks_.push_back(child("up_blocks." + std::to_string(i),
                               std::make_unique<WanUpBlock>(in_dim, dims[i + 1], config.num_res_blocks,
                                                            up_flag ? &mode : nullptr, config.is_residual)));
  }
  norm_out_ = child("norm_out", std::make_unique<WanRMSNorm>(dims.back(), /*images=*/false));
  conv_out_ = child("conv_out", std::make_unique<WanCausalConv3d>(dims.back(), config.out_channels, K{3, 3, 3},
                                                                  K{1, 1, 1}, K{1, 1, 1}));
}

at::Tensor WanDecoder3d::forward(const at::Tensor& x, WanFeatCache& cache, bool first_chunk) const {
  at::Tensor y = conv_in_->forward_cached(x, cache);
  y = mid_block_->forward(y, cache);
  for (const auto* block : up_blocks_) y = block->forward(y, cache, first_chunk);
  y = at::silu(norm_out_->forward(y));
  return conv_out_->forward_cached(y, cache);
}

}  // namespace omni::models
