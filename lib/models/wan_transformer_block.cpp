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

at::Tensor WanTransformerBlock::forward(const at::Tensor& x, const at::Tensor& context, const at::Tensor& timestep_proj,
                                        const RotaryEmbedding& rope, AttentionBackend* backend) const {
  const auto dtype = x.scalar_type();
  const bool per_token = timestep_proj.dim() == 4;
  OMNI_CHECK(per_token || timestep_proj.dim() == 3, "timestep_proj must be [B, 6, D] or [B, S, 6, D], got ",
             timestep_proj.sizes());

  // Scalar timesteps: table [1, 6, D] + [B, 6, D]; per-token: [1, 1, 6, D] + [B, S, 6, D]. float32 either way.
  auto table = per_token ? scale_shift_table_.unsqueeze(0) : scale_shift_table_;
  auto mod = table + timestep_proj.to(at::kFloat);  // [B, 6, D] or [B, S, 6, D]
  auto part = [&](int i) {
    auto m = mod.select(-2, i);             // [B, D] or [B, S, D]
    return per_token ? m : m.unsqueeze(1);  // broadcastable over [B, S, D]
  };
  const auto shift_msa = part(0), scale_msa = part(1), gate_msa = part(2);
  const auto c_shift = part(3), c_scale = part(4), c_gate = part(5);
  const at::Tensor none;

  // 1. Self-attention.
  auto h = (wan::layer_norm_fp32(x, none, none, eps_) * (1 + scale_msa) + shift_msa).to(dtype);
  auto attn = attn1_->forward(h, at::Tensor(), &rope, backend);
  auto out = (x.to(at::kFloat) + attn * gate_msa).to(dtype);

  // 2. Cross-attention (no gate; the residual sum stays in the activation dtype).
  h = cross_attn_norm_ ? wan::layer_norm_fp32(out, *norm2_weight_, *norm2_bias_, eps_).to(dtype) : out;
  out = out + attn2_->forward(h, context, nullptr, backend);

  // 3. Feed-forward.
  h = (wan::layer_norm_fp32(out, none, none, eps_) * (1 + c_scale) + c_shift).to(dtype);
  auto ff = ffn_->forward(h);
  return (out.to(at::kFloat) + ff.to(at::kFloat) * c_gate).to(dtype);
}

}  // namespace omni::models
