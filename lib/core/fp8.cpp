#include "core/fp8.h"

#include <algorithm>

#include "core/error.h"

namespace omni::fp8 {

at::Tensor row_scales(const at::Tensor& amax) {
  auto a = amax.to(at::kFloat);
  return at::where(a > 0, a / kE4m3Max, at::ones_like(a));
}

at::Tensor quantize(const at::Tensor& values, const at::Tensor& scale) {
  return (values.to(at::kFloat) / scale.to(at::kFloat)).clamp_(-kE4m3Max, kE4m3Max).to(at::kFloat8_e4m3fn);
}

void quantize_into(at::Tensor& out, const at::Tensor& values, const at::Tensor& scale) {
  OMNI_CHECK(values.dim() == 2 && out.sizes() == values.sizes() && out.scalar_type() == at::kFloat8_e4m3fn &&
                 scale.dim() == 2 && scale.size(0) == values.size(0) && scale.size(1) == 1,
             "quantize_into: values ", values.sizes(), ", scale ", scale.sizes(), ", out ", out.sizes(), " ",
             out.scalar_type());
  const int64_t rows = values.size(0), cols = values.size(1);
  const int64_t step = std::max<int64_t>(1, kDequantChunkElements / std::max<int64_t>(1, cols));
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t n = std::min(step, rows - r);
    out.narrow(0, r, n).copy_(quantize(values.narrow(0, r, n), scale.narrow(0, r, n)));  // [n, cols]
  }
}

at::Tensor dequantize(const at::Tensor& q, const at::Tensor& scale, at::ScalarType dtype) {
  if (q.dim() != 2 || scale.dim() != 2 || scale.size(0) != q.size(0) || scale.size(1) != 1 || q.numel() == 0) {
    return (q.to(at::kFloat) * scale).to(dtype);
  }
  // A whole float32 copy of an A14B feed-forward weight would be 283 MB (twice, with the product) next to
  // the result; row chunks bound the temporaries. The same elementwise arithmetic.
  const int64_t rows = q.size(0), cols = q.size(1);
  const int64_t step = std::max<int64_t>(1, kDequantChunkElements / std::max<int64_t>(1, cols));
  auto out = at::empty({rows, cols}, q.options().dtype(dtype));  // [rows, cols]
  for (int64_t r = 0; r < rows; r += step) {
    const int64_t n = std::min(step, rows - r);
    auto part = q.narrow(0, r, n).to(at::kFloat);  // [n, cols]
    part.mul_(scale.narrow(0, r, n));
    out.narrow(0, r, n).copy_(part);  // the one rounding to `dtype`
  }
  return out;
}

at::Tensor weight_as(const at::Tensor& weight, const at::Tensor& scale, at::ScalarType dtype) {
  if (weight.scalar_type() != at::kFloat8_e4m3fn) return weight;
  OMNI_CHECK(scale.defined() && scale.numel() == weight.size(0), "a float8 weight of ", weight.size(0),
             " rows without as many row scales");
  return dequantize(weight, scale.view({-1, 1}), dtype);
}

}  // namespace omni::fp8
