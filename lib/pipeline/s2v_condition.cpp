#include "pipeline/s2v_condition.h"

#include <cmath>

#include "core/error.h"

namespace omni::pipeline {

std::pair<int64_t, int64_t> s2v_video_size(int64_t height, int64_t width, int64_t max_area, int64_t divisor) {
  OMNI_CHECK(height > 0 && width > 0 && max_area > 0 && divisor > 0, "s2v_video_size: ", height, "x", width, ", area ",
             max_area, ", divisor ", divisor);
  double min_scale = 0.1, max_scale = 1.0;
  if (height * width > max_area) {
    // The scale at which rounding both sides up by the most (divisor - 1) still fits: the root of
    // a s^2 + b s + c = 0 as Wan2.2 writes it (with its 2ac under the root).
    const int64_t d = divisor - 1;
    const int64_t b = d * (height + width), a = height * width, c = d * d - max_area;
    min_scale = (-static_cast<double>(b) + std::sqrt(static_cast<double>(b * b - 2 * a * c))) / (2.0 * a);
    max_scale = std::sqrt(static_cast<double>(max_area) / static_cast<double>(height * width));
  }
  for (int i = 0; i < 100; ++i) {
    const double scale = max_scale - (max_scale - min_scale) * i / 100;
    const auto h = static_cast<int64_t>(static_cast<double>(height) * scale);
    const auto w = static_cast<int64_t>(static_cast<double>(width) * scale);
    // Each side rounded up to a multiple of 64 (Wan2.2 pads by 64 here whatever the divisor).
    const int64_t padded_h = h + (64 - h % 64) % 64, padded_w = w + (64 - w % 64) % 64;
    if (padded_h * padded_w <= max_area) return {padded_h, padded_w};
  }
  // No scale fits: the aspect-kept size floored to the divisor, or the image floored when that is not smaller.
  const double aspect = static_cast<double>(width) / static_cast<double>(height);
  const auto floored = [&](double side) {
    return static_cast<int64_t>(std::floor(side / static_cast<double>(divisor)) * static_cast<double>(divisor));
  };
  int64_t w = floored(std::sqrt(static_cast<double>(max_area) * aspect));
  int64_t h = floored(std::sqrt(static_cast<double>(max_area) / aspect));
  if (w >= width || h >= height) {
    w = width / divisor * divisor;
    h = height / divisor * divisor;
  }
  return {h, w};
}

}  // namespace omni::pipeline
