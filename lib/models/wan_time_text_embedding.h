// WanTimeTextImageEmbedding (condition_embedder): the sinusoidal timestep projection, time_embedder (float32,
// diffusers' _keep_in_fp32_modules), time_proj to the 6-way block modulation, the text projection
// (PixArtAlphaTextProjection with tanh-GELU), and on Wan2.1's image models image_embedder
// (WanImageEmbedding) for the CLIP image states.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "models/module.h"
#include "models/wan_image_embedding.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

// diffusers get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0): t [N] -> [N, dim]
// float32, laid out [cos | sin].
at::Tensor timestep_sinusoid(const at::Tensor& timesteps, int64_t dim);

// Per-token timesteps as runs of tokens that share one (TI2V with an image: the conditioning frame's tokens at
// 0, the others at t, two runs). The embedding and each block's modulation are computed once per run and
// applied to the run's tokens: the values diffusers computes per token, without its per-token tables
// (temb [B, S, D], timestep_proj [B, S, 6, D] and each block's float32 copy: gigabytes at 720p).
struct TokenRuns {
  std::vector<int64_t> starts;  // first token of each run, ascending from 0; empty: one timestep per batch row
  int64_t tokens = 0;           // the tokens the runs cover
  bool empty() const { return starts.empty(); }
  int64_t size() const { return static_cast<int64_t>(starts.size()); }
  int64_t length(int64_t r) const { return (r + 1 < size() ? starts[static_cast<size_t>(r + 1)] : tokens) - start(r); }
  int64_t start(int64_t r) const { return starts[static_cast<size_t>(r)]; }
  // The runs over tokens [begin, begin + count), numbered from that slice's first token; *first: the index of
  // its first run among these.
  TokenRuns narrow(int64_t begin, int64_t count, int64_t* first) const;
  // The runs of per-token timesteps [B, S] on the host (a run ends where any row's timestep changes) and, in
  // *values, their timesteps [B, R] (timestep's dtype, on the host).
  static TokenRuns of(const at::Tensor& timestep, at::Tensor* values);
};

struct ConditionEmbedding {
  at::Tensor temb;           // [B, D], or [B, R, D] per run of `runs`, activation dtype
  at::Tensor timestep_proj;  // [B, 6, D], or [B, R, 6, D] per run, activation dtype
  at::Tensor context;        // [B, L, D] projected text, activation dtype
  at::Tensor context_image;  // [B, N, D] projected CLIP image states, activation dtype; undefined without
  TokenRuns runs;            // per-token timesteps' runs; empty with one timestep per batch row
};

class WanTimeTextEmbedding : public Module {
 public:
  // image_dim 0: no image branch (Wan2.2); pos_embed_seq_len 0: no image position table (WanImageEmbedding).
  WanTimeTextEmbedding(int64_t dim, int64_t freq_dim, int64_t text_dim, int64_t image_dim = 0,
                       int64_t pos_embed_seq_len = 0);

  // timestep: [B] or [B, S] (per token: embedded per run of equal timesteps, TokenRuns), anywhere (moved to
  // the context's device); context: [B, L, text_dim]. `dtype` is the activation dtype (what diffusers'
  // type_as(encoder_hidden_states) yields). image: the CLIP states [I, N, image_dim] (I images: one, or the first
  // and last with the position table), required with an image branch and refused without; the same
  // embedded rows condition every batch row (diffusers passes them to both guidance branches).
  ConditionEmbedding forward(const at::Tensor& timestep, const at::Tensor& context, at::ScalarType dtype,
                             const at::Tensor& image = at::Tensor()) const;

 private:
  int64_t dim_;
  int64_t freq_dim_;
  wan::Linear* time_linear_1_;
  wan::Linear* time_linear_2_;
  wan::Linear* time_proj_;
  wan::Linear* text_linear_1_;
  wan::Linear* text_linear_2_;
  WanImageEmbedding* image_embedder_ = nullptr;
};

}  // namespace omni::models
