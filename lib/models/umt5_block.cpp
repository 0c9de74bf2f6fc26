#include "models/umt5_block.h"

#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/fp8.h"
#include "models/umt5_encoder.h"

namespace omni::models {

at::Tensor t5_layer_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  auto variance = x.to(at::kFloat).pow(2).mean(-1, /*keepdim=*/true);  // [..., 1] float32
  auto y = x * at::rsqrt(variance + eps);                              // float32 by type promotion
  const auto wt = weight.scalar_type();
  if (wt == at::kHalf || wt == at::kBFloat16) y = y.to(wt);
  return weight * y;
}

at::Tensor gelu_new(const at::Tensor& x) {
  const double k = std::sqrt(2.0 / M_PI);
  return 0.5 * x * (1.0 + at::tanh(k * (x + 0.044715 * at::pow(x, 3.0))));
}

at::Tensor relative_position_buckets(int64_t q_len, int64_t k_len, int64_t num_buckets, int64_t max_distance,
                                     const at::Device& device) {
  const auto opts = at::TensorOptions().dtype(at::kLong).device(device);
  auto context = at::arange(q_len, opts).unsqueeze(1);  // [Lq, 1]
  auto memory = at::arange(k_len, opts).unsqueeze(0);   // [1, Lk]
  auto relative = memory - context;                     // [Lq, Lk]: key position minus query position
  const int64_t half = num_buckets / 2;                 // per direction (bidirectional encoder)
  auto buckets = (relative > 0).to(at::kLong) * half;
  relative = at::abs(relative);
  const int64_t max_exact = half / 2;
  auto is_small = relative < max_exact;
  // float32 like transformers; log(0) = -inf only reaches positions that is_small selects away.
  auto log_ratio = at::log(relative.to(at::kFloat) / static_cast<double>(max_exact)) /
                   std::log(static_cast<double>(max_distance) / static_cast<double>(max_exact));
  log_ratio = log_ratio * static_cast<double>(half - max_exact);
  auto if_large = max_exact + log_ratio.to(at::kLong);
  if_large = at::clamp_max(if_large, half - 1);
  return buckets + at::where(is_small, relative, if_large);  // [Lq, Lk]
}

namespace {
double finfo_min(at::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat:
      return static_cast<double>(std::numeric_limits<float>::lowest());
    case at::kBFloat16:
      return -3.3895313892515355e38;  // torch.finfo(torch.bfloat16).min
    case at::kHalf:
      return -65504.0;
    case at::kDouble:
      return std::numeric_limits<double>::lowest();
    default:
      OMNI_FAIL("UMT5: no attention-mask minimum for dtype ", at::toString(dtype));
  }
}

// transformers clamps float16 activations after each sub-layer so that an overflow does not become inf.
at::Tensor clamp_fp16(const at::Tensor& x) {
  if (x.scalar_type() != at::kHalf) return x;
  const double limit = 65504.0 - 1000.0;
  return at::clamp(x, -limit, limit);
}
}  // namespace

at::Tensor extended_attention_mask(const at::Tensor& mask, at::ScalarType dtype) {
  auto m = mask.to(dtype).unsqueeze(1).unsqueeze(1);  // [B, 1, 1, L]
  return (1.0 - m) * finfo_min(dtype);
}

Umt5Block::Umt5Block(const Umt5Config& config, at::ScalarType dtype)
    : num_heads_(config.num_heads), d_kv_(config.d_kv), eps_(config.layer_norm_epsilon) {
  const int64_t d = config.d_model;
  const int64_t inner = config.inner_dim();
  const int64_t ff = config.d_ff;
  q_ = &param("layer.0.SelfAttention.q.weight", {inner, d});
  k_ = &param("layer.0.SelfAttention.k.weight", {inner, d});
  v_ = &param("layer.0.SelfAttention.v.weight", {inner, d});
  o_ = &param("layer.0.SelfAttention.o.weight", {d, inner});
  rel_bias_ = &param("layer.0.SelfAttention.relative_attention_bias.weight",
                     {config.relative_attention_num_buckets, config.num_heads});
  ln_attn_ = &param("layer.0.layer_norm.weight", {d});
  wi_0_ = &param("layer.1.DenseReluDense.wi_0.weight", {ff, d});
  wi_1_ = &param("layer.1.DenseReluDense.wi_1.weight", {ff, d});
  wo_ = &param("layer.1.DenseReluDense.wo.weight", {d, ff},
               dtype == at::kHalf ? ParamDtype::kFloat32 : ParamDtype::kModel);
  ln_ff_ = &param("layer.1.layer_norm.weight", {d});
  wo_dtype_ = dtype == at::kHalf ? at::kFloat : dtype;
  const std::pair<at::Tensor*, at::Tensor*> linears[] = {{q_, &q_scale_},  {k_, &k_scale_},       {v_, &v_scale_},
                                                         {o_, &o_scale_},  {wi_0_, &wi_0_scale_}, {wi_1_, &wi_1_scale_},
                                                         {wo_, &wo_scale_}};
  for (const auto& [w, scale] : linears) float8_capable(*w, *scale);
}

at::Tensor Umt5Block::self_attention(const at::Tensor& h, const at::Tensor& mask_bias,
                                     const at::Tensor& buckets) const {
  const int64_t batch = h.size(0);
  const int64_t len = h.size(1);
  const auto dt = h.scalar_type();
  auto q = at::linear(h, fp8::weight_as(*q_, q_scale_, dt)).view({batch, len, num_heads_, d_kv_}).transpose(1, 2);
  auto k = at::linear(h, fp8::weight_as(*k_, k_scale_, dt)).view({batch, len, num_heads_, d_kv_}).transpose(1, 2);
  auto v = at::linear(h, fp8::weight_as(*v_, v_scale_, dt)).view({batch, len, num_heads_, d_kv_}).transpose(1, 2);
  // q, k, v: [B, L, H*dk] -> [B, H, L, dk]
  // T5 folds the 1/sqrt(d) scaling into the initialization of q, so there is none here.
  auto scores = at::matmul(q, k.transpose(3, 2));                     // [B, H, L, L]
  auto bias = at::embedding(*rel_bias_, buckets).permute({2, 0, 1});  // [H, L, L]
  bias = bias.unsqueeze(0) + mask_bias;                               // [B, H, L, L]
  scores += bias;
  auto weights = at::softmax(scores.to(at::kFloat), -1).to(scores.scalar_type());         // [B, H, L, L]
  auto context = at::matmul(weights, v);                                                  // [B, H, L, dk]
  context = context.transpose(1, 2).contiguous().view({batch, len, num_heads_ * d_kv_});  // [B, L, H*dk]
  return at::linear(context, fp8::weight_as(*o_, o_scale_, dt));                          // [B, L, D]
}

at::Tensor Umt5Block::feed_forward(const at::Tensor& h) const {
  const auto dt = h.scalar_type();
  auto gated = gelu_new(at::linear(h, fp8::weight_as(*wi_0_, wi_0_scale_, dt))) *
               at::linear(h, fp8::weight_as(*wi_1_, wi_1_scale_, dt));  // [B, L, F]
  // wo computes in float32 in float16 models; transformers casts the input to it.
  if (gated.scalar_type() != wo_dtype_) gated = gated.to(wo_dtype_);
  return at::linear(gated, fp8::weight_as(*wo_, wo_scale_, wo_dtype_));  // [B, L, D]
}

at::Tensor Umt5Block::forward(const at::Tensor& x, const at::Tensor& mask_bias, const at::Tensor& buckets) const {
  // Residual sums follow type promotion as in transformers (a float32 wo makes the stream float32).
  auto hidden = x + self_attention(t5_layer_norm(x, *ln_attn_, eps_), mask_bias, buckets);
  hidden = clamp_fp16(hidden);
  hidden = hidden + feed_forward(t5_layer_norm(hidden, *ln_ff_, eps_));
  return clamp_fp16(hidden);
}

}  // namespace omni::models
