// WanCausalConv3d (diffusers autoencoder_kl_wan.py) and the frame cache it shares with the rest of the VAE.
//
// The Wan VAE runs a clip chunk by chunk (encode: frames [0], [1..4], [5..8], ...; decode: one latent frame
// at a time) and stays exactly equal to a whole-clip causal run by carrying, for every cached convolution,
// the last CACHE_T = 2 input frames of the previous chunk. diffusers keeps these in a list (feat_cache)
// indexed by a counter (feat_idx) that every cached layer advances in call order; WanFeatCache is that pair.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <vector>

#include "models/module.h"

namespace omni::models {

class WanFeatCache {
 public:
  // One cached layer's state. diffusers' None is `!frames.defined() && !rep`; its "Rep" marker (an upsample3d
  // layer that has seen the first chunk, whose time conv was skipped) is `rep`.
  struct Slot {
    at::Tensor frames;
    bool rep = false;
    bool empty() const { return !frames.defined() && !rep; }
  };

  // clear_cache(): forget every slot (start of a new clip).
  void reset() {
    slots_.clear();
    next_ = 0;
  }
  // feat_idx = [0]: the next chunk starts with the first slot again.
  void begin_chunk() { next_ = 0; }
  // The slot of the next cached layer in call order (feat_cache[feat_idx]; feat_idx += 1).
  Slot& take();
  size_t size() const { return slots_.size(); }

 private:
  std::vector<Slot> slots_;
  size_t next_ = 0;
};

// The last 2 frames of `x` (the next chunk's history), prepending the previous history's last frame when the
// chunk holds a single frame and a history exists ("cache last frame of last two chunk").
at::Tensor wan_next_history(const at::Tensor& x, const WanFeatCache::Slot& slot);

// A Conv3d whose time padding (2 * pad_t frames) is all in front: zeros, or the previous chunk's frames.
// Parameters: weight [out, in, kt, kh, kw], bias [out].
class WanCausalConv3d : public Module {
 public:
  WanCausalConv3d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 3> kernel,
                  std::array<int64_t, 3> stride = {1, 1, 1}, std::array<int64_t, 3> padding = {0, 0, 0});

  // Convolution of `x` [B, C, T, H, W] with `history` (undefined: none) standing in for that many frames of
  // the front zero padding (diffusers' forward(x, cache_x)).
  at::Tensor forward(const at::Tensor& x, const at::Tensor& history = at::Tensor()) const;
  // The cached call: takes the next slot of `cache`, convolves with its history and stores the new one.
  at::Tensor forward_cached(const at::Tensor& x, WanFeatCache& cache) const;

  int64_t in_channels() const { return in_channels_; }
  int64_t out_channels() const { return out_channels_; }
  const at::Tensor& weight() const { return *weight_; }
  const at::Tensor& bias() const { return *bias_; }

 private:
  int64_t in_channels_;
  int64_t out_channels_;
  std::array<int64_t, 3> stride_;
  std::array<int64_t, 3> padding_;
  at::Tensor* weight_;
  at::Tensor* bias_;
};

// torch.nn.Conv2d with bias (the VAE's spatial resampling and attention projections).
class WanConv2d : public Module {
 public:
  WanConv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride = 1, int64_t padding = 0);
  at::Tensor forward(const at::Tensor& x) const;  // [N, C, H, W]

 private:
  int64_t stride_;
  int64_t padding_;
  at::Tensor* weight_;
  at::Tensor* bias_;
};

}  // namespace omni::models
