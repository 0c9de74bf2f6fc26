// Float8 weights: float8_e4m3fn values with one float32 scale per output channel (row of a Linear weight),
// value = float8 x scale. The one definition of the quantization, shared by the load (hsdp/flat_param), the
// matrix products (models/wan_transformer_layers), the tests and the benchmarks.
#pragma once

#include <ATen/ATen.h>

namespace omni::fp8 {

// The largest finite float8_e4m3fn (S.1111.110 = 1.75 x 2^8).
constexpr double kE4m3Max = 448.0;

// Per-row scales from the rows' largest magnitudes: amax / 448 in float32, so each row's largest value maps to
// 448 exactly. A row of zeros gets scale 1 (its values quantize to 0 either way).
at::Tensor row_scales(const at::Tensor& amax);

// values / scale (float32, scale broadcast against values), clamped to +-448 (float8_e4m3fn has no infinity:
// a larger value would become NaN), rounded to the nearest float8_e4m3fn (ties to even).
at::Tensor quantize(const at::Tensor& values, const at::Tensor& scale);

// Rows of float32 temporaries dequantize() and quantize_into() work through at once: a float8 weight's
// dequantized copy costs its size in `dtype` plus at most this many float32 elements (the memory plan counts
// both).
constexpr int64_t kDequantChunkElements = int64_t{1} << 22;

// quantize() of [rows, cols] `values` with [rows, 1] `scale` written into `out` (float8_e4m3fn, the same shape;
// a view is fine), in row chunks of at most kDequantChunkElements float32 temporaries.
void quantize_into(at::Tensor& out, const at::Tensor& values, const at::Tensor& scale);

// float8 -> float32 (exact), times scale (broadcast), one rounding to `dtype`. A [rows, cols] q with a
// [rows, 1] scale is done in row chunks of at most kDequantChunkElements float32 elements.
at::Tensor dequantize(const at::Tensor& q, const at::Tensor& scale, at::ScalarType dtype);

// A Linear weight [out, in] for one product in `dtype`: dequantized with its row scales `scale` [out] when it is
// float8, else `weight` itself.
at::Tensor weight_as(const at::Tensor& weight, const at::Tensor& scale, at::ScalarType dtype);

}  // namespace omni::fp8
