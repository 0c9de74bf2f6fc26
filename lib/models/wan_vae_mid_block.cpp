#include "models/wan_vae_mid_block.h"

namespace omni::models {

WanMidBlock::WanMidBlock(int64_t dim) {
  // diffusers' num_layers is 1 for both encoder and decoder: resnets.0, attentions.0, resnets.1.
  resnet0_ = child("resnets.0", std::make_unique<WanResidualBlock>(dim, dim));
  attention_ = child("attentions.0", std::make_unique<WanAttentionBlock>(dim));
  resnet1_ = child("resnets.1", std::make_unique<WanResidualBlock>(dim, dim));
}

at::Tensor WanMidBlock::forward(const at::Tensor& x, WanFeatCache& cache) const {
  at::Tensor y = resnet0_->forward(x, cache);
  y = attention_->forward(y);
  return resnet1_->forward(y, cache);
}

}  // namespace omni::models
