// Thin wrappers over LibTorch calls whose exact numerics the reference fixes (PyTorch 2.x; docs/DESIGN.md section 7).
#pragma once

#include <ATen/ATen.h>

#include <optional>

namespace omni::compat {

// softmax(q k^T * scale) v over [B, H, S, d] tensors, no mask: LibTorch's fused kernel (flash / cuDNN /
// memory-efficient on CUDA, the flash kernel on the CPU), as diffusers' F.scaled_dot_product_attention.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               std::optional<double> scale = std::nullopt) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
}

// x * rsqrt(mean(x^2, -1) + eps) * weight with the statistics in float32 and the result in x's dtype: LibTorch's
// rms_norm, which torch.nn.RMSNorm (diffusers' norm_q / norm_k) calls.
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return at::rms_norm(x, {x.size(-1)}, weight, eps);
}

}  // namespace omni::compat
