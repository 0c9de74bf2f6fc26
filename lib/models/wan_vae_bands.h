// Patch-parallel VAE decode (xDiT's DistVAE idea, docs/DESIGN.md section 10): the ranks of a group decode one
// clip together, each a horizontal band of the latent's rows. Every spatial convolution reads its neighbours'
// boundary rows (the halo) where a whole-frame decode reads the next rows, and zeros only at the clip's top and
// bottom, so each band's output is exactly those rows of the whole-frame decode, not a blend of tiles. The
// causal time cache stays per band (the cached frames are the band's own rows; their halo is exchanged with
// the rest of the input). The mid-block's spatial attention sees whole frames: its input rows are gathered
// (at the latent's resolution, the smallest of the decode).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

#include "dist/process_group.h"

namespace omni::models {

class VaeBands {
 public:
  // `group`'s ranks split `latent_rows` rows as evenly as possible (the first bands one row larger), in group
  // rank order. Needs latent_rows >= group size.
  VaeBands(dist::ProcessGroup* group, int64_t latent_rows);

  int count() const { return static_cast<int>(rows_.size()); }
  int index() const { return index_; }
  int64_t latent_rows(int band) const { return rows_[static_cast<size_t>(band)]; }
  int64_t latent_begin(int band) const;

  // `x` with `pad` rows of dimension `h_dim` added on each side from the neighbouring bands (zeros beyond the
  // clip's first and last rows). [.., H, ..] -> [.., pad + H + pad, ..]
  at::Tensor with_halo(const at::Tensor& x, int64_t h_dim, int64_t pad) const;
  // Every band's rows of dimension `h_dim`, in order, on every rank: this band's `x` -> the whole frame.
  at::Tensor all_rows(const at::Tensor& x, int64_t h_dim) const;
  // This band's rows of a whole-frame tensor at the same resolution as all_rows' input.
  at::Tensor own_rows(const at::Tensor& full, int64_t h_dim) const;
  // The bands' tensors concatenated along `h_dim` on group rank `root` (an undefined tensor elsewhere).
  at::Tensor gather_rows(const at::Tensor& band, int64_t h_dim, int root) const;

 private:
  // Rows of every band at the resolution of `x` (this band's `x` has scale * latent rows).
  std::vector<int64_t> rows_at(const at::Tensor& x, int64_t h_dim) const;

  dist::ProcessGroup* group_;
  int index_;
  std::vector<int64_t> rows_;  // latent rows per band
};

// The bands in effect on this thread: WanCausalConv3d, WanConv2d and WanAttentionBlock consult it (null: the
// whole-frame decode).
const VaeBands* current_vae_bands();

class ScopedVaeBands {
 public:
  explicit ScopedVaeBands(const VaeBands* bands);
  ~ScopedVaeBands();
  ScopedVaeBands(const ScopedVaeBands&) = delete;
  ScopedVaeBands& operator=(const ScopedVaeBands&) = delete;

 private:
  const VaeBands* previous_;
};

}  // namespace omni::models
