// WanTimeTextImageEmbedding (condition_embedder) without the image branch: the sinusoidal timestep
// projection, time_embedder (float32, diffusers' _keep_in_fp32_modules), time_proj to the 6-way block
// modulation, and the text projection (PixArtAlphaTextProjection with tanh-GELU).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "models/module.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

// diffusers get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0): t [N] -> [N, dim]
// float32, laid out [cos | sin].
at::Tensor timestep_sinusoid(const at::Tensor& timesteps, int64_t dim);

struct ConditionEmbedding {
  at::Tensor temb;           // [B, D] or [B, S, D] (per-token timesteps), activation dtype
  at::Tensor timestep_proj;  // [B, 6, D] or [B, S, 6, D], activation dtype
  at::Tensor context;        // [B, L, D] projected text, activation dtype
};

class WanTimeTextEmbedding : public Module {
 public:
  WanTimeTextEmbedding(int64_t dim, int64_t freq_dim, int64_t text_dim);

  // timestep: [B] or [B, S] (any numeric dtype); context: [B, L, text_dim]. `dtype` is the activation dtype
  // (what diffusers' type_as(encoder_hidden_states) yields).
  ConditionEmbedding forward(const at::Tensor& timestep, const at::Tensor& context, at::ScalarType dtype) const;

 private:
  int64_t dim_;
  int64_t freq_dim_;
  wan::Linear* time_linear_1_;
  wan::Linear* time_linear_2_;
  wan::Linear* time_proj_;
  wan::Linear* text_linear_1_;
  wan::Linear* text_linear_2_;
};

}  // namespace omni::models
