// One layer of transformers' Wav2Vec2EncoderStableLayerNorm (Wav2Vec2EncoderLayerStableLayerNorm), the HSDP unit
// of the wav2vec2 audio encoder (Wan2.2-S2V's wav2vec2-large-xlsr-53-english): normalization before each part.
//   x += out_proj(attention(layer_norm(x)))                     attention: {q_proj, k_proj, v_proj, out_proj}
//   x += output_dense(gelu(intermediate_dense(final_layer_norm(x))))   feed_forward
// Parameters are registered under the checkpoint names relative to "[wav2vec2.]encoder.layers.<i>.".
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"

namespace omni::models {

struct Wav2Vec2Config;

class Wav2Vec2EncoderLayer : public Module {
 public:
  explicit Wav2Vec2EncoderLayer(const Wav2Vec2Config& config);

  // x [B, T, D] in the model dtype -> [B, T, D]. No attention mask: Wan2.2 passes none (one unpadded clip).
  at::Tensor forward(const at::Tensor& x) const;

 private:
  int64_t heads_;
  double eps_;
  at::Tensor& ln_weight_;
  at::Tensor& ln_bias_;
  at::Tensor& q_weight_;
  at::Tensor& q_bias_;
  at::Tensor& k_weight_;
  at::Tensor& k_bias_;
  at::Tensor& v_weight_;
  at::Tensor& v_bias_;
  at::Tensor& out_weight_;
  at::Tensor& out_bias_;
  at::Tensor& final_ln_weight_;
  at::Tensor& final_ln_bias_;
  at::Tensor& ff_in_weight_;
  at::Tensor& ff_in_bias_;
  at::Tensor& ff_out_weight_;
  at::Tensor& ff_out_bias_;
};

}  // namespace omni::models
