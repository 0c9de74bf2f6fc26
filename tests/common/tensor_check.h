// The one measure of how far a tensor is from its reference, for every test (GoogleTest or the multi-rank
// harness): the largest element-wise difference, computed in float64 on the CPU.
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <limits>

namespace omni::test_util {

// A model's output against diffusers' on the same float32 weights and inputs, relative to its scale (max_rel_err):
// the same float32 operations, the attention and GEMM kernels' summation orders aside.
constexpr double kModelFloat32RelTol = 1e-5;

// max |a - b|; infinite when the shapes differ, 0 for empty tensors.
inline double max_abs_err(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  if (a.numel() == 0) return 0.0;
  return (a.to(at::kCPU, at::kDouble) - b.to(at::kCPU, at::kDouble)).abs().max().item<double>();
}

// max |a - b| / max |b|: the error relative to the reference's (b's) scale.
inline double max_rel_err(const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() != b.sizes()) return std::numeric_limits<double>::infinity();
  if (a.numel() == 0) return 0.0;
  const double scale = std::max(b.to(at::kCPU, at::kDouble).abs().max().item<double>(), 1e-30);
  return max_abs_err(a, b) / scale;
}

}  // namespace omni::test_util
