// Small building blocks of WanTransformer3DModel that diffusers takes from its shared modules: nn.Linear,
// FeedForward ("gelu-approximate"), and FP32LayerNorm as a function. They live in namespace wan so that
// other models' helpers of the same name do not collide inside omni_models.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <functional>

#include "models/module.h"

namespace omni::models::wan {

// Which names a Wan module registers its weights under: diffusers' (WanTransformer3DModel and the models converted
// to it), or Wan2.2's original ones (wan/modules/model.py: self_attn.q, ffn.0, modulation, norm3, ...) for
// WanModel_S2V, which diffusers does not have, so its checkpoint is read under the names it was saved with.
enum class WeightNames { kDiffusers, kWanOriginal };

// nn.Linear with bias: weight [out, in], bias [out]. The input must already be in the weight's dtype;
// callers cast explicitly where diffusers does, so a silent mixed-dtype path cannot hide. The weight may be
// held in float8 (models/fp8_weights.h) with a float32 scale per output channel: it is then dequantized to the
// input's dtype inside forward (after the HSDP gather), or, with fp8_matmul(), multiplied in float8.
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, ParamDtype rule = ParamDtype::kModel);
  at::Tensor forward(const at::Tensor& x) const;
  // tanh-GELU(forward(x)), fused into the matrix product where LibTorch has that (CUDA, 16-bit dtypes).
  at::Tensor forward_gelu_tanh(const at::Tensor& x) const;
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }

 private:
  // x @ W^T + b for a weight in any held dtype.
  at::Tensor product(const at::Tensor& x) const;

  int64_t in_;
  int64_t out_;
  at::Tensor& weight_;
  at::Tensor& bias_;
  at::Tensor weight_scale_;  // [out] float32 when weight_ is float8 (set by HSDP), else undefined
};

// x [..., in] times a float8 weight [out, in] (row scales [out]) on float8 matrix hardware: x quantized per
// token (row scale = amax / 448), the float8 product by at::_scaled_mm in float32 accumulation, times both
// row scales (inside the kernel on CUDA for bfloat16, after it elsewhere), bias added in x's dtype. [..., out].
at::Tensor scaled_mm_linear(const at::Tensor& x, const at::Tensor& weight_fp8, const at::Tensor& weight_scale,
                            const at::Tensor& bias);

// diffusers FeedForward(dim, inner_dim, activation_fn="gelu-approximate"): net.0.proj, tanh-GELU, net.2
// (net.1 is dropout and holds no weights). Under Wan's original names the nn.Sequential's 0 and 2.
class FeedForward : public Module {
 public:
  FeedForward(int64_t dim, int64_t inner_dim, WeightNames names = WeightNames::kDiffusers);
  at::Tensor forward(const at::Tensor& x) const;

 private:
  Linear* proj_;
  Linear* out_;
};

// FP32LayerNorm over the last dimension: statistics and affine in float32, result float32 (diffusers
// casts back to the input dtype, but every Wan call site feeds a float32 input, so that cast is a no-op).
// `weight`/`bias` may be undefined (elementwise_affine=False).
at::Tensor layer_norm_fp32(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps);

// torch.nn.RMSNorm over the last dimension (diffusers' norm_q / norm_k, rms_norm_across_heads), as LibTorch
// computes it: x * rsqrt(mean(x^2) + eps) * weight in float32 (`weight` in x's dtype), rounded to x's dtype.
// On CUDA, LibTorch's fused kernel (what F.rms_norm runs there). On the CPU, where LibTorch composes it of
// eight kernels with float32 temporaries, one pass; its mean is accumulated in float64, where LibTorch's
// float32 sum may differ by about one rounding.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// Conv3d with kernel == stride (patch embeddings): input [B, C, F, H, W], weight [D, C, pt, ph, pw], bias [D] ->
// [B, F/pt * H/ph * W/pw, D], tokens in (frame, row, column) order. Each patch is one row times the flattened
// kernel: the same sum as the convolution, in every dtype on every device.
at::Tensor embed_patches(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                         const std::array<int64_t, 3>& patch);

// A [B, ...] result whose row b is row_fn(b), a [1, ...] tensor computed from batch row b alone (a narrow of
// dim 0 of each input). Every product of the transformer runs this way, so that its arithmetic is one CFG
// branch's whatever the batch: GEMM, convolution and attention libraries choose kernels, and with them
// summation orders, by row count (a GEMV for one row; other blockings for other counts: on an AVX-512 Xeon a
// bfloat16 block changed with its batch, and cuBLAS chooses algorithms by shape), so one rank's [cond; uncond]
// batch would differ in the last bits from one branch per CFG
// rank, and from diffusers, which calls the transformer once per branch (DESIGN section 4). At real token
// counts each row alone is a full-size product, so the loop costs a second kernel launch per operator, not
// throughput. A batch of one is row_fn(0) itself, not a copy.
at::Tensor each_batch_row(int64_t batch, const std::function<at::Tensor(int64_t b)>& row_fn);

}  // namespace omni::models::wan
