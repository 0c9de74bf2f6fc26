// One layer of transformers' CLIPEncoder (CLIPEncoderLayer), the HSDP unit of the CLIP image encoder:
//   x += out_proj(attention(layer_norm1(x)))     self_attn: {q_proj, k_proj, v_proj, out_proj}, all with bias
//   x += fc2(act(fc1(layer_norm2(x))))           mlp: {fc1, fc2}
// Parameters are registered under the checkpoint names relative to "vision_model.encoder.layers.<i>.".
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"

namespace omni::models {

struct ClipVisionConfig;

// transformers' ACT2FN entries a CLIP vision config names in hidden_act.
enum class ClipActivation {
  kGelu,       // "gelu": exact (erf) GELU, open_clip's ViT-H/14 as converted for Wan2.1
  kQuickGelu,  // "quick_gelu": x * sigmoid(1.702 x), OpenAI's CLIP
};

class ClipEncoderLayer : public Module {
 public:
  ClipEncoderLayer(const ClipVisionConfig& config);

  // x [B, S, D] in the model dtype -> [B, S, D]. No attention mask (every image token sees every other).
  at::Tensor forward(const at::Tensor& x) const;

 private:
  int64_t heads_;
  double eps_;
  ClipActivation act_;
  at::Tensor& ln1_weight_;
  at::Tensor& ln1_bias_;
  at::Tensor& q_weight_;
  at::Tensor& q_bias_;
  at::Tensor& k_weight_;
  at::Tensor& k_bias_;
  at::Tensor& v_weight_;
  at::Tensor& v_bias_;
  at::Tensor& out_weight_;
  at::Tensor& out_bias_;
  at::Tensor& ln2_weight_;
  at::Tensor& ln2_bias_;
  at::Tensor& fc1_weight_;
  at::Tensor& fc1_bias_;
  at::Tensor& fc2_weight_;
  at::Tensor& fc2_bias_;
};

}  // namespace omni::models
