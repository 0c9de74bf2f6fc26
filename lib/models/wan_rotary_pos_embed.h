// WanRotaryPosEmbed: 3-axis rotary position embedding over the (frame, row, column) patch grid.
//
// head_dim d is split into frame / row / column parts of d - 4*(d//6), 2*(d//6), 2*(d//6) channels; each part
// rotates its channel pairs by position * 10000^(-2i/k) (angles and cos/sin in float64, then float32, as
// diffusers' get_1d_rotary_pos_embed). Pairs are interleaved: channels (2i, 2i+1) form one complex number.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace omni::models {

// cos and sin per token and channel pair: [S, d/2] float32 each, contiguous, tokens in (frame, row, column)
// order. A sequence-parallel rank slices both along dim 0 to its tokens (still contiguous).
struct RotaryEmbedding {
  at::Tensor cos;
  at::Tensor sin;
  RotaryEmbedding slice(int64_t begin, int64_t end) const {
    return {cos.slice(0, begin, end), sin.slice(0, begin, end)};
  }
};

class WanRotaryPosEmbed {
 public:
  WanRotaryPosEmbed(int64_t attention_head_dim, int64_t max_seq_len, double theta = 10000.0);

  // Tables for a post-patch grid of frames x height x width tokens, on `device`. Built once per grid and
  // device and kept there (every denoising step asks for the same grid: no host-to-device copy per step).
  RotaryEmbedding forward(int64_t frames, int64_t height, int64_t width, const at::Device& device) const;
  // Tables for tokens at arbitrary positions: positions [S, 3] int64 (frame, row, column) on the host, each
  // token rotated by its own positions (WanModel_S2V's reference and motion tokens). A negative position p
  // rotates by -|p| (cos as at |p|, sin negated: Wan's conjugated table entry). |p| < max_seq_len.
  RotaryEmbedding at_positions(const at::Tensor& positions, const at::Device& device) const;

 private:
  int64_t head_dim_;
  int64_t max_seq_len_;
  // Per axis (frame, row, column): the repeat-interleaved tables [max_seq_len, part] in float32, CPU, with
  // parts d - 4*(d//6), 2*(d//6), 2*(d//6) as diffusers builds and splits them.
  std::array<at::Tensor, 3> cos_;
  std::array<at::Tensor, 3> sin_;
  // The last few grids' tables, by (frames, height, width, device).
  mutable std::map<std::tuple<int64_t, int64_t, int64_t, std::string>, RotaryEmbedding> cache_;
};

// Rotates q or k: x [B, S, H, d] (float32, bfloat16 or float16), rope tables [S, d/2]. Per channel pair, in
// float32 as diffusers (its bf16 x times the float32 tables promotes): out[2i] = x[2i] c - x[2i+1] s and
// out[2i+1] = x[2i] s + x[2i+1] c, each product and sum rounded to float32 (no fused multiply-add), one
// rounding to x's dtype at the end. One pass: x read once, the result written once (diffusers: ten kernels
// and float32 temporaries per tensor). CPU and CUDA.
at::Tensor apply_rotary_emb(const at::Tensor& x, const RotaryEmbedding& rope);

}  // namespace omni::models
