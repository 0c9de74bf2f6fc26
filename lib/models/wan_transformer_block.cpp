#include "models/wan_transformer_block.h"

#include "core/error.h"

namespace omni::models {

WanTransformerBlock::WanTransformerBlock(int64_t dim, int64_t ffn_dim, int64_t heads, bool cross_attn_norm, double eps)
    : eps_(eps),
      cross_attn_norm_(cross_attn_norm),
      attn1_(child("attn1", std::make_unique<WanAttention>(dim, heads, eps, AttentionKind::kSelf))),
      attn2_(child("attn2", std::make_unique<WanAttention>(dim, heads, eps, AttentionKind::kCross))),
      ffn_(child("ffn", std::make_unique<wan::FeedForward>(dim, ffn_dim))),
      scale_shift_table_(param("scale_shift_table", {1, 6, dim}, ParamDtype::kFloat32)) {
  // norm1 and norm3 have no affine parameters; norm2 (FP32LayerNorm with affine) only with cross_attn_norm.
  if (cross_attn_norm) {
    norm2_weight_ = &param("norm2.weight", {dim}, ParamDtype::kFloat32);
    norm2_bias_ = &param("norm2.bias", {dim}, ParamDtype::kFloat32);
  }
}

namespace {

// norm * (1 + scale) + shift in float32, rounded once into a new tensor of `dtype`: diffusers'
// (norm * (1 + scale) + shift).type_as(x) as one kernel (addcmul into an output of the activation dtype
// computes in float32 and rounds on the store), not four passes over [B, S, D] float32 temporaries.
at::Tensor modulate(const at::Tensor& norm, const at::Tensor& scale, const at::Tensor& shift, at::ScalarType dtype) {
  auto out = at::empty(norm.sizes(), norm.options().dtype(dtype));  // [B, S, D]
  return at::addcmul_out(out, shift, norm, 1 + scale);
}

}  // namespace

at::Tensor WanTransformerBlock::forward(const at::Tensor& x, const at::Tensor& context, const at::Tensor& timestep_proj,
                                        const RotaryEmbedding& rope, AttentionBackend* backend) const {
  const auto dtype = x.scalar_type();
  const bool per_token = timestep_proj.dim() == 4;
  OMNI_CHECK(per_token || timestep_proj.dim() == 3, "timestep_proj must be [B, 6, D] or [B, S, 6, D], got ",
             timestep_proj.sizes());

  // Scalar timesteps: table [1, 6, D] + [B, 6, D]; per-token: [1, 1, 6, D] + [B, S, 6, D]. The float32 table
  // promotes e0 to float32 in the sum, as diffusers' temb.float() does first.
  auto table = per_token ? scale_shift_table_.unsqueeze(0) : scale_shift_table_;
  auto mod = table + timestep_proj;  // [B, 6, D] or [B, S, 6, D] float32
  auto part = [&](int i) {
    auto m = mod.select(-2, i);             // [B, D] or [B, S, D]
    return per_token ? m : m.unsqueeze(1);  // broadcastable over [B, S, D]
  };
  const auto shift_msa = part(0), scale_msa = part(1), gate_msa = part(2);
  const auto c_shift = part(3), c_scale = part(4), c_gate = part(5);
  const at::Tensor none;

  // 1. Self-attention. The gated residual x + attn * gate in float32 (x and attn read as float32: addcmul
  // promotes to the float32 gate) rounded once into `out`, this block's own tensor from here on.
  auto h = modulate(wan::layer_norm_fp32(x, none, none, eps_), scale_msa, shift_msa, dtype);
  auto attn = attn1_->forward(h, at::Tensor(), &rope, backend);
  auto out = at::empty_like(x);  // [B, S, D]
  at::addcmul_out(out, x, attn, gate_msa);

  // 2. Cross-attention (no gate; the residual sum stays in the activation dtype, in place).
  h = cross_attn_norm_ ? wan::layer_norm_fp32(out, *norm2_weight_, *norm2_bias_, eps_).to(dtype) : out;
  out.add_(attn2_->forward(h, context, nullptr, backend));

  // 3. Feed-forward; its gated residual in float32, rounded into `out` in place.
  h = modulate(wan::layer_norm_fp32(out, none, none, eps_), c_scale, c_shift, dtype);
  return out.addcmul_(ffn_->forward(h), c_gate);
}

}  // namespace omni::models
