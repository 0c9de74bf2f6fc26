#include "models/wan_s2v_frame_packer.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

namespace {

// numpy.linspace(first, last, n).astype(int): n samples from first to last inclusive (first alone for n = 1),
// truncated toward zero; the arithmetic numpy does (i * step + first in double, the last sample exactly `last`).
std::vector<int64_t> spread(int64_t first, int64_t last, int64_t n) {
  std::vector<int64_t> out;
  const double step = n > 1 ? static_cast<double>(last - first) / static_cast<double>(n - 1) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = (n > 1 && i == n - 1) ? static_cast<double>(last) : static_cast<double>(i) * step + first;
    out.push_back(static_cast<int64_t>(v));
  }
  return out;
}

// The rotary positions of a group of tokens laid out frames x rows x columns (frame-major): each axis' positions,
// every combination, in token order. [frames * rows * cols, 3] int64.
at::Tensor grid_positions(const std::vector<int64_t>& frames, const std::vector<int64_t>& rows,
                          const std::vector<int64_t>& cols) {
  std::vector<int64_t> flat;
  for (int64_t f : frames)
    for (int64_t r : rows)
      for (int64_t c : cols) flat.insert(flat.end(), {f, r, c});
  return at::tensor(flat, at::kLong).view({-1, 3});
}

}  // namespace

WanS2VFramePacker::WanS2VFramePacker(int64_t in_channels, int64_t dim)
    : in_channels_(in_channels),
      proj_(projection("proj", in_channels, dim, {1, 2, 2})),
      proj_2x_(projection("proj_2x", in_channels, dim, {2, 4, 4})),
      proj_4x_(projection("proj_4x", in_channels, dim, {4, 8, 8})) {}

WanS2VFramePacker::Projection WanS2VFramePacker::projection(const std::string& name, int64_t in, int64_t dim,
                                                            std::array<int64_t, 3> kernel) {
  return {&param(name + ".weight", {dim, in, kernel[0], kernel[1], kernel[2]}), &param(name + ".bias", {dim}), kernel};
}

MotionTokens WanS2VFramePacker::forward(const at::Tensor& motion, int64_t keep_newest) const {
  OMNI_CHECK(motion.dim() == 5 && motion.size(0) == 1 && motion.size(1) == in_channels_,
             "S2V frame packer: motion "
             "latents must be [1, ",
             in_channels_, ", M, h, w], got ", motion.sizes());
  const int64_t h = motion.size(3), w = motion.size(4);
  OMNI_CHECK_USAGE(h % 8 == 0 && w % 8 == 0, "S2V: the latent size ", h, "x", w,
                   " must be a multiple of 8 (the coarsest motion tokens take 8 x 8 latent cells; 64 pixels)");
  OMNI_CHECK(keep_newest >= 0 && keep_newest <= 2, "S2V frame packer: keep_newest must be 0, 1 or 2");
  // The newest 19 frames, zero-padded at the old end when the history is shorter.
  at::Tensor packed = at::zeros({1, in_channels_, kFrames, h, w}, motion.options());  // [1, C, 19, h, w]
  const int64_t overlap = std::min(kFrames, motion.size(2));
  if (overlap > 0)
    packed.narrow(2, kFrames - overlap, overlap).copy_(motion.narrow(2, motion.size(2) - overlap, overlap));
  // add_last_motion < 2 ("padd"): the newest 1 (keep 1) or 3 (keep 0) frames zeroed.
  const int64_t zeroed = keep_newest == 2 ? 0 : (keep_newest == 1 ? 1 : 3);
  if (zeroed > 0) packed.narrow(2, kFrames - zeroed, zeroed).zero_();

  auto embed = [&](const Projection& p, int64_t first, int64_t count) {
    return wan::embed_patches(packed.narrow(2, first, count), *p.weight, *p.bias, p.kernel);  // [1, n, D]
  };
  const auto post = embed(proj_, 18, 1);   // [1, (h/2)(w/2), D]
  const auto x2 = embed(proj_2x_, 16, 2);  // [1, (h/4)(w/4), D]
  const auto x4 = embed(proj_4x_, 0, 16);  // [1, 4 (h/8)(w/8), D]

  // Rotary positions (rope_precompute's grids): the fine grid's rows 0 .. h/2 - 1 (columns alike) sampled at the
  // coarse grid's count; frames at -1; -3; and -19, -14, -9, -4 (linspace(19, 4, 4), negated).
  const int64_t rows = h / 2, cols = w / 2;
  auto negated = [](std::vector<int64_t> v) {
    for (auto& x : v) x = -x;
    return v;
  };
  const at::Tensor positions = at::cat(
      {grid_positions({-1}, spread(0, rows - 1, rows), spread(0, cols - 1, cols)),
       grid_positions({-3}, spread(0, rows - 1, h / 4), spread(0, cols - 1, w / 4)),
       grid_positions(negated(spread(19, 4, 4)), spread(0, rows - 1, h / 8), spread(0, cols - 1, w / 8))});  // [M, 3]
  return {at::cat({post, x2, x4}, 1), positions};  // [1, M, D], [M, 3]
}

}  // namespace omni::models
