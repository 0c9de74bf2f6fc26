// diffusers' WanImageEmbedding (condition_embedder.image_embedder), Wan2.1's CLIP image branch: the CLIP image
// encoder's penultimate hidden states [B, N, image_dim] projected to the transformer's width:
//   x (+ pos_embed, FLF2V: the two images' tokens as one sequence of 2N) -> norm1 -> ff -> norm2
//   norm1.{weight,bias}   [image_dim]       FP32LayerNorm; float32 (its name matches _keep_in_fp32_modules' norm1)
//   ff.net.0.proj.{w,b}   [image_dim, image_dim]  FeedForward(mult=1, activation "gelu": exact GELU)
//   ff.net.2.{w,b}        [D, image_dim]
//   norm2.{weight,bias}   [D]               FP32LayerNorm; float32 (norm2)
//   pos_embed             [1, pos_embed_seq_len, image_dim]  only with pos_embed_seq_len (FLF2V-14B: 514)
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanImageEmbedding : public Module {
 public:
  // pos_embed_seq_len 0: no position table.
  WanImageEmbedding(int64_t image_dim, int64_t dim, int64_t pos_embed_seq_len);

  // image [B, N, image_dim] in the activation dtype `dtype` -> [B', N', D] in `dtype`. With the position table
  // the images' tokens are regrouped as diffusers' view(-1, 2 N, image_dim) does (two images of one video, N =
  // pos_embed_seq_len / 2 each, become one row of 2 N tokens), so B' = B / 2 then.
  at::Tensor forward(const at::Tensor& image, at::ScalarType dtype) const;

  int64_t pos_embed_seq_len() const { return pos_embed_seq_len_; }

 private:
  int64_t pos_embed_seq_len_;
  at::Tensor& norm1_weight_;
  at::Tensor& norm1_bias_;
  wan::Linear* ff_proj_;
  wan::Linear* ff_out_;
  at::Tensor& norm2_weight_;
  at::Tensor& norm2_bias_;
  at::Tensor* pos_embed_ = nullptr;
};

}  // namespace omni::models
