#include "core/fp8.h"

namespace omni::fp8 {

at::Tensor row_scales(const at::Tensor& amax) {
  auto a = amax.to(at::kFloat);
  return at::where(a > 0, a / kE4m3Max, at::ones_like(a));
}

at::Tensor quantize(const at::Tensor& values, const at::Tensor& scale) {
  return (values.to(at::kFloat) / scale.to(at::kFloat)).clamp_(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn);
}

at::Tensor dequantize(const at::Tensor& q, const at::Tensor& scale, at::ScalarType dtype) {
  return (q.to(at::kFloat) * scale).to(dtype);
}

}  // namespace omni::fp8
