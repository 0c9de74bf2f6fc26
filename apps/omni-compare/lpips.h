// LPIPS (Zhang, Isola, Efros, Shechtman, Wang, "The Unreasonable Effectiveness of Deep Features as a Perceptual
// Metric", CVPR 2018) with the AlexNet trunk and the v0.1 linear layers, as the PyPI lpips package (0.1.4)
// computes lpips.LPIPS(net='alex', version='0.1')(a, b, normalize=True). The weights come from
// tools/lpips/convert_weights.py; tests/io/omni_compare_lpips_test.cpp holds the two against the package
// (tools/reference/lpips_reference.py).
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <string>
#include <vector>

namespace omni::compare {

// AlexNet's trunk halves a frame by a stride-4 convolution and two 3x3 stride-2 max pools; the second pool needs
// a 3x3 input, so frames smaller than 31 pixels on a side have no LPIPS (the package fails on them too).
inline constexpr int64_t kLpipsMinSize = 31;

// LPIPS, AlexNet backbone, linear layers v0.1, as lpips.LPIPS(net='alex', version='0.1') computes it:
//   x in [0, 1] -> 2x - 1 -> (x - shift) / scale (the package's ScalingLayer) -> AlexNet `features` up to each
//   of relu1..relu5 -> each feature divided by its channel norm sqrt(sum_c f^2) + 1e-10 -> squared difference of
//   the two frames' -> a 1x1 convolution to one channel (no bias) -> spatial mean -> the sum over the 5 layers.
// Const and without mutable state: one instance may serve several threads at once.
class Lpips {
 public:
  // Reads the weights from one safetensors file (written by tools/lpips/convert_weights.py): the package's
  // state_dict names less its `lins.N.*` duplicates. Missing or unexpected tensors and wrong shapes are an input
  // error naming the tensors and the file.
  explicit Lpips(const std::string& path);

  // Distance of each frame pair: a and b are [N, H, W, 3] (or [H, W, 3]) frames with values in [0, 1], any real
  // dtype, H and W at least kLpipsMinSize; returns N distances (the package's LPIPS(normalize=True) output,
  // spatially averaged). Computed in float32, a few frames at a time so that memory stays bounded.
  std::vector<double> distances(const at::Tensor& a, const at::Tensor& b) const;
  double distance(const at::Tensor& a, const at::Tensor& b) const;  // one frame pair [H, W, 3]

  // Frames per forward pass: 4 pairs of 1280x720 frames take about 600 MB at the peak (measured).
  static constexpr int64_t kBatch = 4;
  static constexpr int kLayers = 5;

 private:
  // The five AlexNet feature maps relu1..relu5 of frames x, [n, 3, H, W] float32 already scaled.
  std::array<at::Tensor, kLayers> features(const at::Tensor& x) const;
  // [n, 3, H, W] float32 in [0, 1] -> the AlexNet input: 2x - 1, then the ScalingLayer.
  at::Tensor scale_input(const at::Tensor& x) const;

  at::Tensor shift_, scale_;                         // [1, 3, 1, 1]
  std::array<at::Tensor, kLayers> conv_w_, conv_b_;  // net.sliceK.I.weight [O, I, k, k], .bias [O]
  std::array<at::Tensor, kLayers> lin_w_;            // linK.model.1.weight [1, C, 1, 1]
};

}  // namespace omni::compare
