#include "models/wan_vae_attention_block.h"

#include "core/torch_compat.h"
#include "models/wan_vae_bands.h"

namespace omni::models {

WanAttentionBlock::WanAttentionBlock(int64_t dim) {
  norm_ = child("norm", std::make_unique<WanRMSNorm>(dim, /*images=*/true));
  to_qkv_ = child("to_qkv", std::make_unique<WanConv2d>(dim, dim * 3, 1));
  proj_ = child("proj", std::make_unique<WanConv2d>(dim, dim, 1));
}

at::Tensor WanAttentionBlock::forward(const at::Tensor& x) const {
  if (const VaeBands* bands = current_vae_bands()) {
    // Attention over whole frames: gather every band's rows, attend, keep this band's.
    const at::Tensor full = bands->all_rows(x, 3);  // [B, C, T, H_all, W]
    ScopedVaeBands whole(nullptr);
    return bands->own_rows(forward(full), 3);
  }
  const int64_t b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  at::Tensor y = x.permute({0, 2, 1, 3, 4}).reshape({b * t, c, h, w});         // [B*T, C, H, W]
  y = to_qkv_->forward(norm_->forward(y));                                     // [B*T, 3C, H, W]
  y = y.reshape({b * t, 1, c * 3, h * w}).permute({0, 1, 3, 2}).contiguous();  // [B*T, 1, HW, 3C]
  auto qkv = y.chunk(3, -1);                                                   // 3 x [B*T, 1, HW, C]
  y = compat::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2]);            // [B*T, 1, HW, C], scale 1/sqrt(C)
  y = y.squeeze(1).permute({0, 2, 1}).reshape({b * t, c, h, w});               // [B*T, C, H, W]
  y = proj_->forward(y);
  return y.view({b, t, c, h, w}).permute({0, 2, 1, 3, 4}).add(x);  // [B, C, T, H, W]
}

}  // namespace omni::models
