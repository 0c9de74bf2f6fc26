#include "models/wan_vae_residual_block.h"

namespace omni::models {

WanResidualBlock::WanResidualBlock(int64_t in_dim, int64_t out_dim) {
  using K = std::array<int64_t, 3>;
  norm1_ = child("norm1", std::make_unique<WanRMSNorm>(in_dim, /*images=*/false));
  conv1_ = child("conv1", std::make_unique<WanCausalConv3d>(in_dim, out_dim, K{3, 3, 3}, K{1, 1, 1}, K{1, 1, 1}));
  norm2_ = child("norm2", std::make_unique<WanRMSNorm>(out_dim, /*images=*/false));
  conv2_ = child("conv2", std::make_unique<WanCausalConv3d>(out_dim, out_dim, K{3, 3, 3}, K{1, 1, 1}, K{1, 1, 1}));
  if (in_dim != out_dim) {
    conv_shortcut_ = child("conv_shortcut", std::make_unique<WanCausalConv3d>(in_dim, out_dim, K{1, 1, 1}));
  }
}

at::Tensor WanResidualBlock::forward(const at::Tensor& x, WanFeatCache& cache) const {
  at::Tensor h = conv_shortcut_ ? conv_shortcut_->forward(x) : x;
  at::Tensor y = at::silu(norm1_->forward(x));
  y = conv1_->forward_cached(y, cache);
  y = at::silu(norm2_->forward(y));
  y = conv2_->forward_cached(y, cache);  // dropout is the identity at inference
  return y.add_(h);
}

}  // namespace omni::models
