#include "models/clip_encoder_layer.h"

#include "core/torch_compat.h"
#include "models/clip_vision_model.h"

namespace omni::models {

ClipEncoderLayer::ClipEncoderLayer(const ClipVisionConfig& c)
    : heads_(c.num_attention_heads),
      eps_(c.layer_norm_eps),
      act_(c.hidden_act),
      ln1_weight_(param("layer_norm1.weight", {c.hidden_size})),
      ln1_bias_(param("layer_norm1.bias", {c.hidden_size})),
      q_weight_(param("self_attn.q_proj.weight", {c.hidden_size, c.hidden_size})),
      q_bias_(param("self_attn.q_proj.bias", {c.hidden_size})),
      k_weight_(param("self_attn.k_proj.weight", {c.hidden_size, c.hidden_size})),
      k_bias_(param("self_attn.k_proj.bias", {c.hidden_size})),
      v_weight_(param("self_attn.v_proj.weight", {c.hidden_size, c.hidden_size})),
      v_bias_(param("self_attn.v_proj.bias", {c.hidden_size})),
      out_weight_(param("self_attn.out_proj.weight", {c.hidden_size, c.hidden_size})),
      out_bias_(param("self_attn.out_proj.bias", {c.hidden_size})),
      ln2_weight_(param("layer_norm2.weight", {c.hidden_size})),
      ln2_bias_(param("layer_norm2.bias", {c.hidden_size})),
      fc1_weight_(param("mlp.fc1.weight", {c.intermediate_size, c.hidden_size})),
      fc1_bias_(param("mlp.fc1.bias", {c.intermediate_size})),
      fc2_weight_(param("mlp.fc2.weight", {c.hidden_size, c.intermediate_size})),
      fc2_bias_(param("mlp.fc2.bias", {c.hidden_size})) {}

at::Tensor ClipEncoderLayer::forward(const at::Tensor& x) const {
  const int64_t dim = x.size(2);
  // Self-attention: q, k, v [B, S, D] -> [B, H, S, d]; softmax(q k^T / sqrt(d)) v, transformers' CLIPAttention
  // with its sdpa implementation (scale head_dim^-0.5, no mask, no dropout at inference).
  auto h = at::layer_norm(x, {dim}, ln1_weight_, ln1_bias_, eps_);
  auto heads = [&](const at::Tensor& t) { return t.unflatten(2, {heads_, -1}).transpose(1, 2); };  // [B, H, S, d]
  const auto q = heads(at::linear(h, q_weight_, q_bias_));
  const auto k = heads(at::linear(h, k_weight_, k_bias_));
  const auto v = heads(at::linear(h, v_weight_, v_bias_));
  auto attn = compat::scaled_dot_product_attention(q, k, v);  // [B, H, S, d]
  attn = attn.transpose(1, 2).flatten(2, 3);                  // [B, S, D]
  auto out = x + at::linear(attn, out_weight_, out_bias_);

  // MLP.
  h = at::layer_norm(out, {dim}, ln2_weight_, ln2_bias_, eps_);
  h = at::linear(h, fc1_weight_, fc1_bias_);  // [B, S, intermediate]
  h = act_ == ClipActivation::kGelu ? at::gelu(h) : h * at::sigmoid(h * 1.702);
  return out + at::linear(h, fc2_weight_, fc2_bias_);
}

}  // namespace omni::models
