// diffusers' WanAnimateFaceBlockCrossAttention (Wan2.2-Animate's FaceAdapter block, face_adapter.<k>): after
// main block k * inject_face_latents_blocks, each video token attends to the face tokens of its own latent
// frame, and the result is added to the token.
//
//   pre_norm_q, pre_norm_kv    LayerNorm over D, no affine, in the activation dtype (no parameters)
//   to_q, to_k, to_v, to_out   Linear D -> D with bias (to_out is a plain Linear here, not WanAttention's list)
//   norm_q.weight, norm_k.weight  RMSNorm over one head's width [d] (after the head split, unlike WanAttention)
// Frame-local: under sequence parallelism a rank's tokens attend to the face tokens of the frames they lie in,
// which every rank holds whole, so the split needs no communication and gives one rank's result.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanAnimateFaceAdapter : public Module {
 public:
  WanAnimateFaceAdapter(int64_t dim, int64_t heads, double eps);

  // x [B, S', D]: tokens first_token .. first_token + S' - 1 of the video (frame-major, frame_tokens a latent
  // frame); face [B, T, N, D]: each latent frame's face tokens (T frames, all of the video's). Returns the
  // adapter's output [B, S', D] (the caller adds it to x), in x's dtype.
  at::Tensor forward(const at::Tensor& x, const at::Tensor& face, int64_t first_token, int64_t frame_tokens) const;

 private:
  int64_t heads_;
  double eps_;
  wan::Linear* to_q_;
  wan::Linear* to_k_;
  wan::Linear* to_v_;
  wan::Linear* to_out_;
  at::Tensor& norm_q_;  // [d]
  at::Tensor& norm_k_;  // [d]
};

}  // namespace omni::models
