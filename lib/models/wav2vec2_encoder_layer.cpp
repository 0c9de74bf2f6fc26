#include "models/wav2vec2_encoder_layer.h"

#include "core/torch_compat.h"
#include "models/wav2vec2_model.h"

namespace omni::models {

Wav2Vec2EncoderLayer::Wav2Vec2EncoderLayer(const Wav2Vec2Config& c)
    : heads_(c.num_attention_heads),
      eps_(c.layer_norm_eps),
      ln_weight_(param("layer_norm.weight", {c.hidden_size})),
      ln_bias_(param("layer_norm.bias", {c.hidden_size})),
      q_weight_(param("attention.q_proj.weight", {c.hidden_size, c.hidden_size})),
      q_bias_(param("attention.q_proj.bias", {c.hidden_size})),
      k_weight_(param("attention.k_proj.weight", {c.hidden_size, c.hidden_size})),
      k_bias_(param("attention.k_proj.bias", {c.hidden_size})),
      v_weight_(param("attention.v_proj.weight", {c.hidden_size, c.hidden_size})),
      v_bias_(param("attention.v_proj.bias", {c.hidden_size})),
      out_weight_(param("attention.out_proj.weight", {c.hidden_size, c.hidden_size})),
      out_bias_(param("attention.out_proj.bias", {c.hidden_size})),
      final_ln_weight_(param("final_layer_norm.weight", {c.hidden_size})),
      final_ln_bias_(param("final_layer_norm.bias", {c.hidden_size})),
      ff_in_weight_(param("feed_forward.intermediate_dense.weight", {c.intermediate_size, c.hidden_size})),
      ff_in_bias_(param("feed_forward.intermediate_dense.bias", {c.intermediate_size})),
      ff_out_weight_(param("feed_forward.output_dense.weight", {c.hidden_size, c.intermediate_size})),
      ff_out_bias_(param("feed_forward.output_dense.bias", {c.hidden_size})) {}

at::Tensor Wav2Vec2EncoderLayer::forward(const at::Tensor& x) const {
  const int64_t dim = x.size(2);
  // Self-attention, transformers' Wav2Vec2Attention (sdpa): q, k, v [B, T, D] -> [B, H, T, d]; softmax(q k^T /
  // sqrt(d)) v; no mask, no dropout at inference.
  auto h = at::layer_norm(x, {dim}, ln_weight_, ln_bias_, eps_);
  auto heads = [&](const at::Tensor& t) { return t.unflatten(2, {heads_, -1}).transpose(1, 2); };  // [B, H, T, d]
  const auto q = heads(at::linear(h, q_weight_, q_bias_));
  const auto k = heads(at::linear(h, k_weight_, k_bias_));
  const auto v = heads(at::linear(h, v_weight_, v_bias_));
  auto attn = compat::scaled_dot_product_attention(q, k, v);  // [B, H, T, d]
  attn = attn.transpose(1, 2).flatten(2, 3);                  // [B, T, D]
  auto out = x + at::linear(attn, out_weight_, out_bias_);

  // Feed-forward with exact (erf) GELU, transformers' "gelu".
  h = at::layer_norm(out, {dim}, final_ln_weight_, final_ln_bias_, eps_);
  h = at::gelu(at::linear(h, ff_in_weight_, ff_in_bias_));  // [B, T, intermediate]
  return out + at::linear(h, ff_out_weight_, ff_out_bias_);
}

}  // namespace omni::models
