#include "models/wan_vae_encoder.h"

#include <string>

#include "core/error.h"

namespace omni::models {

WanResidualDownBlock::WanResidualDownBlock(int64_t in_dim, int64_t out_dim, int64_t num_res_blocks,
                                           bool temporal_downsample, bool down_flag)
    : out_dim_(out_dim), factor_t_(temporal_downsample ? 2 : 1), factor_s_(down_flag ? 2 : 1) {
  for (int64_t i = 0; i < num_res_blocks; ++i) {
    resnets_.push_back(child("resnets." + std::to_string(i), std::make_unique<WanResidualBlock>(in_dim, out_dim)));
    in_dim = out_dim;
  }
  if (down_flag) {
    auto mode = temporal_downsample ? WanResampleMode::kDownsample3d : WanResampleMode::kDownsample2d;
    downsampler_ = child("downsampler", std::make_unique<WanResample>(out_dim, mode, out_dim / 2));
  }
}

at::Tensor WanResidualDownBlock::forward(const at::Tensor& x, WanFeatCache& cache) const {
  at::Tensor y = x;
  for (const auto* resnet : resnets_) y = resnet->forward(y, cache);
  if (downsampler_) y = downsampler_->forward(y, cache);
  // The shortcut sees only this chunk: a lone first frame is front-padded with a zero frame and averaged.
  at::Tensor shortcut = wan_avg_down_3d(x, out_dim_, factor_t_, factor_s_);
  return y.is_same(x) ? y + shortcut : y.add_(shortcut);  // never write into the caller's tensor
}

WanEncoder3d::WanEncoder3d(const WanEncoderConfig& config) {
  using K = std::array<int64_t, 3>;
  const auto& mult = config.dim_mult;
  OMNI_CHECK(config.temporal_downsample.size() + 1 == mult.size(), "WanEncoder3d: temperal_downsample needs ",
             mult.size() - 1, " entries, got ", config.temporal_downsample.size());
  std::vector<int64_t> dims{config.dim};
  for (int64_t m : mult) dims.push_back(config.dim * m);

  conv_in_ = child("conv_in",
                   std::make_unique<WanCausalConv3d>(config.in_channels, dims[0], K{3, 3, 3}, K{1, 1, 1}, K{1, 1, 1}));
  const size_t levels = mult.size();
  int index = 0;
  auto name = [&index] { return "down_blocks." + std::to_string(index++); };
  for (size_t i = 0; i < levels; ++i) {
    int64_t in_dim = dims[i];
    const int64_t out_dim = dims[i + 1];
    const bool last = i + 1 == levels;
    if (config.is_residual) {
      Layer layer;
      layer.residual_down =
          child(name(), std::make_unique<WanResidualDownBlock>(in_dim, out_dim, config.num_res_blocks,
                                                               !last && config.temporal_downsample[i], !last));
      down_blocks_.push_back(layer);
      continue;
    }
    for (int64_t r = 0; r < config.num_res_blocks; ++r) {
      Layer layer;
      layer.resnet = child(name(), std::make_unique<WanResidualBlock>(in_dim, out_dim));
      down_blocks_.push_back(layer);
      in_dim = out_dim;
    }
    if (!last) {
      auto mode = config.temporal_downsample[i] ? WanResampleMode::kDownsample3d : WanResampleMode::kDownsample2d;
      Layer layer;
      layer.resample = child(name(), std::make_unique<WanResample>(out_dim, mode, out_dim / 2));
      down_blocks_.push_back(layer);
    }
  }
  const int64_t top = dims.back();
  mid_block_ = child("mid_block", std::make_unique<WanMidBlock>(top));
  norm_out_ = child("norm_out", std::make_unique<WanRMSNorm>(top, /*images=*/false));
  conv_out_ = child("conv_out",
                    std::make_unique<WanCausalConv3d>(top, config.out_channels, K{3, 3, 3}, K{1, 1, 1}, K{1, 1, 1}));
}

at::Tensor WanEncoder3d::forward(const at::Tensor& x, WanFeatCache& cache) const {
  at::Tensor y = conv_in_->forward_cached(x, cache);
  for (const auto& layer : down_blocks_) {
    if (layer.resnet) {
      y = layer.resnet->forward(y, cache);
    } else if (layer.resample) {
      y = layer.resample->forward(y, cache);
    } else {
      y = layer.residual_down->forward(y, cache);
    }
  }
  y = mid_block_->forward(y, cache);
  y = at::silu(norm_out_->forward(y));
  return conv_out_->forward_cached(y, cache);
}

}  // namespace omni::models
