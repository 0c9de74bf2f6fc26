// WanAttention (diffusers WanAttnProcessor): to_q/to_k/to_v, RMSNorm of q and k over the full width (before
// the head split), RoPE on self-attention, softmax(q k^T / sqrt(d)) v, to_out.0. On Wan2.1's image models the
// cross-attention also attends to the CLIP image tokens with its own keys and values (add_k_proj with
// norm_added_k, add_v_proj): a second softmax over those alone, added to the text one before to_out.
//
// The softmax core is reached only through wan_attention_core(), which takes an optional AttentionBackend:
// sequence parallelism (Ulysses all-to-all, ring) plugs in there without touching the model.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

enum class AttentionKind {
  kSelf,   // attn1: q, k, v all come from the video tokens (all sequence-sharded under SP)
  kCross,  // attn2: q from the video tokens, k and v from the whole text context
};

// The core softmax(q k^T * scale) v on [B, H, S, d] tensors (q [B, H, Sq, d], k/v [B, H, Sk, d]), no mask.
// Implementations must return [B, H, Sq, d] in q's dtype.
class AttentionBackend {
 public:
  virtual ~AttentionBackend() = default;
  virtual at::Tensor attend(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind) = 0;
};

// The one entry point for the attention core: `backend` when given, else the local
// omni::compat::scaled_dot_product_attention with scale 1/sqrt(d).
at::Tensor wan_attention_core(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, AttentionKind kind,
                              AttentionBackend* backend);

class WanAttention : public Module {
 public:
  // added_kv_dim > 0 (cross-attention only): the image tokens' key/value projections from that width.
  // names: kWanOriginal registers Wan's WanSelfAttention / WanCrossAttention names (q, k, v, o, norm_q, norm_k).
  WanAttention(int64_t dim, int64_t heads, double eps, AttentionKind kind, int64_t added_kv_dim = 0,
               wan::WeightNames names = wan::WeightNames::kDiffusers);

  // x: [B, S, D] in the activation dtype. Self-attention: `context` undefined, `rope` required.
  // Cross-attention: `context` [B, L, D], `rope` null; with added key/values, `context_image` [B, N, D]
  // (required then, and only then).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& context, const RotaryEmbedding* rope,
                     AttentionBackend* backend, const at::Tensor& context_image = at::Tensor()) const;

 private:
  int64_t heads_;
  double eps_;
  AttentionKind kind_;
  wan::Linear* to_q_;
  wan::Linear* to_k_;
  wan::Linear* to_v_;
  wan::Linear* to_out_;
  at::Tensor& norm_q_;
  at::Tensor& norm_k_;
  wan::Linear* add_k_ = nullptr;
  wan::Linear* add_v_ = nullptr;
  at::Tensor* norm_added_k_ = nullptr;
};

}  // namespace omni::models
