#include "models/wan_transformer_block.h"

#include <string>

#include "core/error.h"

namespace omni::models {

WanTransformerBlock::WanTransformerBlock(int64_t dim, int64_t ffn_dim, int64_t heads, bool cross_attn_norm, double eps,
                                         int64_t added_kv_dim, wan::WeightNames names)
    : eps_(eps),
      cross_attn_norm_(cross_attn_norm),
      attn1_(child(names == wan::WeightNames::kDiffusers ? "attn1" : "self_attn",
                   std::make_unique<WanAttention>(dim, heads, eps, AttentionKind::kSelf, 0, names))),
      attn2_(child(names == wan::WeightNames::kDiffusers ? "attn2" : "cross_attn",
                   std::make_unique<WanAttention>(dim, heads, eps, AttentionKind::kCross, added_kv_dim, names))),
      ffn_(child("ffn", std::make_unique<wan::FeedForward>(dim, ffn_dim, names))),
      scale_shift_table_(param(names == wan::WeightNames::kDiffusers ? "scale_shift_table" : "modulation", {1, 6, dim},
                               ParamDtype::kFloat32)) {
  // diffusers: norm1 and norm3 have no affine parameters; norm2 (FP32LayerNorm with affine) only with
  // cross_attn_norm. Wan's original block calls that cross-attention norm norm3 (its norm2 is the FFN's).
  if (cross_attn_norm) {
    const std::string norm = names == wan::WeightNames::kDiffusers ? "norm2" : "norm3";
    norm2_weight_ = &param(norm + ".weight", {dim}, ParamDtype::kFloat32);
    norm2_bias_ = &param(norm + ".bias", {dim}, ParamDtype::kFloat32);
  }
}

namespace {

// norm * (1 + scale) + shift in float32, rounded once into a new tensor of `dtype`: diffusers'
// (norm * (1 + scale) + shift).type_as(x) as one kernel (addcmul into an output of the activation dtype
// computes in float32 and rounds on the store), not four passes over [B, S, D] float32 temporaries.
// `out` is the result's tensor (a run's tokens of it).
void modulate_into(at::Tensor& out, const at::Tensor& norm, const at::Tensor& scale, const at::Tensor& shift) {
  at::addcmul_out(out, shift, norm, 1 + scale);
}

}  // namespace

at::Tensor WanTransformerBlock::forward(const at::Tensor& x, const at::Tensor& context, const at::Tensor& timestep_proj,
                                        const TokenRuns& runs, const RotaryEmbedding& rope, AttentionBackend* backend,
                                        const at::Tensor& context_image) const {
  const auto dtype = x.scalar_type();
  const bool by_run = !runs.empty();
  OMNI_CHECK(by_run ? timestep_proj.dim() == 4 && timestep_proj.size(1) == runs.size() && runs.tokens == x.size(1)
                    : timestep_proj.dim() == 3,
             "timestep_proj must be [B, 6, D], or [B, R, 6, D] for R runs of the ", x.size(1), " tokens; got ",
             timestep_proj.sizes(), " with ", runs.size(), " runs of ", runs.tokens, " tokens");

  // [1, 1, 6, D] + [B, R, 6, D] (one run of every token without runs). The float32 table promotes e0 to
  // float32 in the sum, as diffusers' temb.float() does first.
  const auto mod = scale_shift_table_.unsqueeze(0) + (by_run ? timestep_proj : timestep_proj.unsqueeze(1));
  const int64_t num_runs = mod.size(1), seq = x.size(1);
  auto part = [&](int i, int64_t r) { return mod.select(2, i).narrow(1, r, 1); };  // [B, 1, D], over [B, n, D]
  // fn(r, t) for each run r, t: a [B, S, D] tensor narrowed to the run's tokens (itself for one run of all).
  auto each_run = [&](const auto& fn) {
    for (int64_t r = 0; r < num_runs; ++r) {
      const int64_t begin = by_run ? runs.start(r) : 0, n = by_run ? runs.length(r) : seq;
      fn(r, [begin, n, seq](const at::Tensor& t) { return n == seq ? t : t.narrow(1, begin, n); });
    }
  };
  // norm * (1 + scale) + shift in float32, rounded once into a new tensor of `dtype` (modulate, per run).
  auto modulated = [&](const at::Tensor& norm, int scale_i, int shift_i) {
    auto out = at::empty(norm.sizes(), norm.options().dtype(dtype));  // [B, S, D]
    each_run([&](int64_t r, const auto& tokens) {
      auto o = tokens(out);
      modulate_into(o, tokens(norm), part(scale_i, r), part(shift_i, r));
    });
    return out;
  };
  const at::Tensor none;

  // 1. Self-attention. The gated residual x + attn * gate in float32 (x and attn read as float32: addcmul
  // promotes to the float32 gate) rounded once into `out`, this block's own tensor from here on.
  auto h = modulated(wan::layer_norm_fp32(x, none, none, eps_), 1, 0);
  auto attn = attn1_->forward(h, at::Tensor(), &rope, backend);
  auto out = at::empty_like(x);  // [B, S, D]
  each_run([&](int64_t r, const auto& tokens) {
    auto o = tokens(out);
    at::addcmul_out(o, tokens(x), tokens(attn), part(2, r));
  });

  // 2. Cross-attention (no gate; the residual sum stays in the activation dtype, in place).
  h = cross_attn_norm_ ? wan::layer_norm_fp32(out, *norm2_weight_, *norm2_bias_, eps_).to(dtype) : out;
  out.add_(attn2_->forward(h, context, nullptr, backend, context_image));

  // 3. Feed-forward; its gated residual in float32, rounded into `out` in place.
  h = modulated(wan::layer_norm_fp32(out, none, none, eps_), 4, 3);
  const auto ff = ffn_->forward(h);
  each_run([&](int64_t r, const auto& tokens) { tokens(out).addcmul_(tokens(ff), part(5, r)); });
  return out;
}

}  // namespace omni::models
