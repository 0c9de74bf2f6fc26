// WanTransformerBlock: modulated self-attention, cross-attention on the text, modulated feed-forward.
// LayerNorms, the modulation arithmetic and the gated residual sums run in float32 exactly where diffusers
// has them; the cross-attention residual is summed in the activation dtype, as there.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_attention.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_time_text_embedding.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanTransformerBlock : public Module {
 public:
  // added_kv_dim > 0: the cross-attention's image key/values (Wan2.1's image models; WanAttention).
  // names: kWanOriginal registers Wan's WanAttentionBlock names (self_attn, cross_attn, norm3 for the
  // cross-attention norm, ffn.0 / ffn.2, modulation): WanModel_S2V's blocks, whose arithmetic is this block's.
  WanTransformerBlock(int64_t dim, int64_t ffn_dim, int64_t heads, bool cross_attn_norm, double eps,
                      int64_t added_kv_dim = 0, wan::WeightNames names = wan::WeightNames::kDiffusers);

  // x: [B, S, D]; context: [B, L, D] (projected text); timestep_proj: [B, 6, D], or [B, R, 6, D] with `runs`
  // the R runs of x's tokens that share a timestep (empty runs: the former); rope: tables for the S tokens of
  // x. Returns [B, S, D] in x's dtype.
  // context_image: [B, N, D] projected CLIP image tokens with image key/values, else undefined.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& context, const at::Tensor& timestep_proj,
                     const TokenRuns& runs, const RotaryEmbedding& rope, AttentionBackend* backend = nullptr,
                     const at::Tensor& context_image = at::Tensor()) const;

 private:
  double eps_;
  bool cross_attn_norm_;
  WanAttention* attn1_;
  WanAttention* attn2_;
  wan::FeedForward* ffn_;
  at::Tensor* norm2_weight_ = nullptr;  // present only with cross_attn_norm
  at::Tensor* norm2_bias_ = nullptr;
  at::Tensor& scale_shift_table_;  // [1, 6, D] float32
};

}  // namespace omni::models
