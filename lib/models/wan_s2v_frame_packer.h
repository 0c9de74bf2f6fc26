// Wan2.2-S2V's FramePackMotioner (frame_packer, wan/modules/s2v/motioner.py): the latents of the previous clip's
// last frames (the motion) into few tokens, the older the coarser. The newest 19 motion latent frames (zero-padded
// at the old end when fewer) are split oldest first into 16 | 2 | 1 frames:
//
//   proj      Conv3d k = s = (1, 2, 2): the newest frame, h/2 x w/2 tokens at rotary frame -1
//   proj_2x   Conv3d k = s = (2, 4, 4): the 2 frames before it, h/4 x w/4 tokens at frame -3
//   proj_4x   Conv3d k = s = (4, 8, 8): the 16 oldest, 4 x h/8 x w/8 tokens at frames -19, -14, -9, -4
//
// appended in that order. The coarse tokens' rows and columns take spread-out positions of the fine h/2 x w/2 grid
// (numpy's linspace truncated, as Wan's rope_precompute samples them). In the root HSDP unit.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>

#include "models/module.h"

namespace omni::models {

struct MotionTokens {
  at::Tensor tokens;     // [1, M, D] in the model dtype
  at::Tensor positions;  // [M, 3] int64 on the host: rotary (frame, row, column), frames negative
};

class WanS2VFramePacker : public Module {
 public:
  WanS2VFramePacker(int64_t in_channels, int64_t dim);

  // The frames taken from the history: 16 + 2 + 1.
  static constexpr int64_t kFrames = 19;

  // motion [1, C, M, h, w] (any M; h, w multiples of 8) in the weights' dtype -> the packed tokens. keep_newest:
  // how many of the groups nearest the present keep their latents (Wan's add_last_motion: 2 all; 1 zeroes the
  // newest frame, 0 the newest 3; "padd" mode: the tokens stay, made of zeros).
  MotionTokens forward(const at::Tensor& motion, int64_t keep_newest = 2) const;

 private:
  struct Projection {
    at::Tensor* weight;
    at::Tensor* bias;
    std::array<int64_t, 3> kernel;
  };
  Projection projection(const std::string& name, int64_t in, int64_t dim, std::array<int64_t, 3> kernel);

  int64_t in_channels_;
  Projection proj_;
  Projection proj_2x_;
  Projection proj_4x_;
};

}  // namespace omni::models
