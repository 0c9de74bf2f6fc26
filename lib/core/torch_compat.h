// The few LibTorch API differences between Debian's 1.13 (CPU, what CI builds) and PyTorch 2.x's LibTorch
// (CUDA, what GPU clusters use) live here and nowhere else.
#pragma once

#include <ATen/ATen.h>
#include <torch/version.h>

#include <cmath>
#include <optional>

#define OMNI_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace omni::compat {

// softmax(q k^T * scale) v over [B, H, S, d] tensors, no mask. On 2.x this is the fused kernel
// (flash / cuDNN / memory-efficient on GPU); on 1.13 the exact composition, with softmax in float32
// so that bfloat16 inputs round like the fused kernels do (once, at the output).
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               std::optional<double> scale = std::nullopt) {
  double s = scale ? *scale : 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
#if OMNI_TORCH_AT_LEAST(2, 1)
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/false, s);
#else
  auto qf = q.to(at::kFloat);
  auto kf = k.to(at::kFloat);
  auto vf = v.to(at::kFloat);
  auto scores = at::matmul(qf, kf.transpose(-2, -1)).mul_(s);  // [B, H, Sq, Sk]
  auto probs = at::softmax(scores, -1);
  return at::matmul(probs, vf).to(q.scalar_type());  // [B, H, Sq, d]
#endif
}

// x * rsqrt(mean(x^2, -1) + eps) * weight, statistics in float32, result in x's dtype.
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto xf = x.to(at::kFloat);
  auto var = xf.pow(2).mean(-1, /*keepdim=*/true);
  auto y = xf * at::rsqrt(var + eps);
  return (y * weight.to(at::kFloat)).to(x.scalar_type());
}

}  // namespace omni::compat
