// diffusers' WanAnimateFaceEncoder (Wan2.2-Animate's FaceEncoder): the motion vectors of the face frames
// [B, T, in_dim] -> face tokens [B, T', heads + 1, D] per reduced frame (T' = ceil(ceil(T / 2) / 2): two causal
// stride-2 convolutions over time), the last token of each frame the learned padding token.
//
//   conv1_local.{weight,bias}  Conv1d in_dim -> hidden * heads, kernel 3; then per head: LayerNorm (norm1, no
//                              affine), SiLU
//   conv2.{weight,bias}        Conv1d hidden -> hidden, kernel 3, stride 2; norm2, SiLU
//   conv3.{weight,bias}        Conv1d hidden -> hidden, kernel 3, stride 2; norm3, SiLU
//   out_proj.{weight,bias}     Linear hidden -> D
//   padding_tokens             [1, 1, 1, D]
// Each convolution is causal: the sequence is padded at its start by repeating the first frame twice.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanAnimateFaceEncoder : public Module {
 public:
  WanAnimateFaceEncoder(int64_t in_dim, int64_t out_dim, int64_t hidden_dim, int64_t num_heads, double eps = 1e-6);

  // motion [B, T, in_dim] in the weights' dtype -> [B, T', heads + 1, out_dim].
  at::Tensor forward(const at::Tensor& motion) const;

  // Reduced frames of T face frames: two stride-2 causal convolutions.
  static int64_t reduced_frames(int64_t frames) { return ((frames + 1) / 2 + 1) / 2; }

 private:
  int64_t hidden_, heads_;
  double eps_;
  at::Tensor& conv1_weight_;  // [hidden * heads, in_dim, 3]
  at::Tensor& conv1_bias_;
  at::Tensor& conv2_weight_;  // [hidden, hidden, 3]
  at::Tensor& conv2_bias_;
  at::Tensor& conv3_weight_;
  at::Tensor& conv3_bias_;
  wan::Linear* out_proj_;
  at::Tensor& padding_tokens_;  // [1, 1, 1, out_dim]
};

}  // namespace omni::models
