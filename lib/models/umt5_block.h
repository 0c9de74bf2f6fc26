// One UMT5 encoder block (transformers' UMT5Block with is_decoder=False), the HSDP unit of the text encoder:
//   x += o(attention(layer_norm_0(x)))       layer.0: SelfAttention {q, k, v, o, relative_attention_bias}
//   x += wo(gelu_new(wi_0 h) * wi_1 h)       layer.1: DenseReluDense {wi_0, wi_1, wo}, h = layer_norm_1(x)
// Parameters are registered under the checkpoint names relative to "encoder.block.<i>.".
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"

namespace omni::models {

struct Umt5Config;

// T5LayerNorm: variance of x in float32, x * rsqrt(variance + eps) (float32 by promotion), cast to the weight's
// dtype when that is half or bfloat16, times the weight. No mean subtraction, no bias.
at::Tensor t5_layer_norm(const at::Tensor& x, const at::Tensor& weight, double eps);

// transformers' NewGELUActivation ("gelu_new"), composed op by op as it is there so that bfloat16 rounds at
// the same places: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
at::Tensor gelu_new(const at::Tensor& x);

// The bidirectional relative-position bucket of every (query, key) pair: [q_len, k_len] int64 on `device`.
// Half the buckets per direction (keys after the query get the upper half); distances below half of those
// are exact, larger ones logarithmic up to max_distance, computed in float32 like transformers does (the
// truncation at bucket edges depends on it).
at::Tensor relative_position_buckets(int64_t q_len, int64_t k_len, int64_t num_buckets, int64_t max_distance,
                                     const at::Device& device);

// additive attention mask from a [B, L] 0/1 mask: (1 - mask) * finfo(dtype).min as [B, 1, 1, L] in `dtype`.
at::Tensor extended_attention_mask(const at::Tensor& mask, at::ScalarType dtype);

class Umt5Block : public Module {
 public:
  // `dtype`: the model's compute dtype. transformers keeps `wo` in float32 when the model is float16
  // (_keep_in_fp32_modules = ["wo"], applied for float16 only), so that slot is float32 then.
  Umt5Block(const Umt5Config& config, at::ScalarType dtype);

  // x [B, L, D]; mask_bias [B, 1, 1, L] (extended_attention_mask); buckets [L, L] (relative_position_buckets).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& mask_bias, const at::Tensor& buckets) const;

 private:
  at::Tensor self_attention(const at::Tensor& h, const at::Tensor& mask_bias, const at::Tensor& buckets) const;
  at::Tensor feed_forward(const at::Tensor& h) const;

  int64_t num_heads_;
  int64_t d_kv_;
  double eps_;
  at::Tensor* q_;
  at::Tensor* k_;
  at::Tensor* v_;
  at::Tensor* o_;
  at::Tensor* rel_bias_;
  at::Tensor* ln_attn_;
  at::Tensor* wi_0_;
  at::Tensor* wi_1_;
  at::Tensor* wo_;
  at::Tensor* ln_ff_;
  // The row scales of the Linear weights a checkpoint stores in float8 (fp8_scaled text encoders: held in float8,
  // dequantized to the activation dtype for each product); undefined otherwise.
  at::Tensor q_scale_, k_scale_, v_scale_, o_scale_, wi_0_scale_, wi_1_scale_, wo_scale_;
  at::ScalarType wo_dtype_;  // what wo computes in: float32 for float16 models (transformers keeps it so)
};

}  // namespace omni::models
