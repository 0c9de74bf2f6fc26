#include "models/wan_transformer_layers.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "core/error.h"
#include "core/fp8.h"
#include "core/torch_compat.h"
#include "models/fp8_weights.h"

namespace omni::models::wan {

Linear::Linear(int64_t in_features, int64_t out_features, ParamDtype rule)
    : in_(in_features),
      out_(out_features),
      weight_(param("weight", {out_features, in_features}, rule)),
      bias_(param("bias", {out_features}, rule)) {
  float8_capable(weight_, weight_scale_);
}

at::Tensor Linear::forward(const at::Tensor& x) const {
  return product(x);
}

at::Tensor Linear::product(const at::Tensor& x) const {
  OMNI_CHECK(weight_.defined(), "Linear used before its weights were loaded");
  if (weight_.scalar_type() == at::kFloat8_e4m3fn) {
    // _scaled_mm on CUDA needs both matrix dimensions to be multiples of 16.
    const bool shapes_fit = !x.is_cuda() || (in_ % 16 == 0 && out_ % 16 == 0);
    if (fp8_matmul() && shapes_fit) return scaled_mm_linear(x, weight_, weight_scale_, bias_);
    // Dequantized in the input's dtype for this product only: the float8 weight stays what is resident.
    return at::linear(x, fp8::weight_as(weight_, weight_scale_, x.scalar_type()), bias_);
  }
  OMNI_CHECK(x.scalar_type() == weight_.scalar_type(), "Linear: input dtype ", x.scalar_type(),
             " differs from weight dtype ", weight_.scalar_type());
  return at::linear(x, weight_, bias_);
}

at::Tensor scaled_mm_linear(const at::Tensor& x, const at::Tensor& weight_fp8, const at::Tensor& weight_scale,
                            const at::Tensor& bias) {
  const int64_t in = weight_fp8.size(1), out = weight_fp8.size(0);
  // The input stays in its dtype: the largest |x| per row is exact in any dtype (no float32 copy, no abs
  // tensor), and the quotient by the scale is made in float32 a row chunk at a time, as the weights' is at load.
  // A whole float32 copy would be ~19 GB of transients at 720p, batch 2 (the FFN down-projection's input).
  const auto flat = x.reshape({-1, in});                                                    // [M, in]
  const auto x_scale = fp8::row_scales(at::linalg_vector_norm(flat, INFINITY, {1}, true));  // [M, 1] float32
  at::Tensor xq = at::empty(flat.sizes(), flat.options().dtype(at::kFloat8_e4m3fn));        // [M, in] float8
  fp8::quantize_into(xq, flat, x_scale);
  // weight_fp8.t() is [in, out] column-major, the layout _scaled_mm wants for its second operand.
  at::Tensor y;  // [M, out]
  if (x.is_cuda() && x.scalar_type() == at::kBFloat16) {
    // Hopper's row-wise scaled kernel: both row scales applied to the float32 accumulator.
    y = at::_scaled_mm(xq, weight_fp8.t(), x_scale, weight_scale.view({1, out}).to(at::kFloat), std::nullopt,
                       std::nullopt, at::kBFloat16, /*use_fast_accum=*/false);
  } else {
    // Per-tensor scales only (CUDA for other dtypes): the float8 product with unit scales in float32, then
    // both row scales. The CPU multiplies the float8 values by the float32 GEMM instead, exact products summed
    // in float32: LibTorch's CPU _scaled_mm (oneDNN) refuses float8 without AVX-512 or AMX, and where it
    // accepts them it may run its reference kernel: ~900 x the float32 GEMM's time here (256 x 1024 x 1024, an
    // AMX Xeon), and CI's run of 4 float8 blocks at 768x768x33 ran past 8 minutes. One path on every CPU.
    if (x.is_cuda()) {
      const auto one = at::ones({1}, flat.options().dtype(at::kFloat));
      y = at::_scaled_mm(xq, weight_fp8.t(), one, one, std::nullopt, std::nullopt, at::kFloat, false);
    } else {
      // As a linear (no bias): the product the FLOP counters and profilers name as the model's others.
      y = at::linear(xq.to(at::kFloat), weight_fp8.to(at::kFloat));  // [M, out] float32
    }
    // In place: the float32 product is [M, out], two more such temporaries would be the largest of the block.
    y = y.mul_(x_scale).mul_(weight_scale.view({1, out}).to(at::kFloat)).to(x.scalar_type());
  }
  if (bias.defined()) y.add_(bias);
  auto sizes = x.sizes().vec();
  sizes.back() = out;
  return y.view(sizes);  // [..., out]
}

at::Tensor Linear::forward_gelu_tanh(const at::Tensor& x) const {
  // float8 weights (their own product) and float32 keep the separate kernel.
  const bool fused =
      weight_.defined() && weight_.scalar_type() == x.scalar_type() && x.is_cuda() && x.scalar_type() != at::kFloat;
  if (fused) {
    // cuBLASLt's GELU epilogue (the tanh form): the activation is applied to the product before it is stored,
    // one pass over [B, S, out] less. Its input is the float32 accumulator where diffusers rounds the product
    // to the activation dtype first: within one rounding of that dtype. float32 keeps the separate kernel, so
    // that float32 runs compute exactly what the reference computes.
    auto flat = x.reshape({-1, in_});                                                   // [B*S, in]
    auto y = at::_addmm_activation(bias_, flat, weight_.t(), 1, 1, /*use_gelu=*/true);  // [B*S, out]
    auto sizes = x.sizes().vec();
    sizes.back() = out_;
    return y.view(sizes);  // [B, S, out]
  }
  // The CPU's _addmm_activation applies the exact (erf) GELU, not Wan's tanh form: product, then GELU in
  // place (one [B, S, out] tensor live instead of two: the widest activation of a block).
  at::Tensor h = product(x);  // [B, S, out]
  return at::gelu_(h, "tanh");
}

FeedForward::FeedForward(int64_t dim, int64_t inner_dim, WeightNames names)
    : proj_(child(names == WeightNames::kDiffusers ? "net.0.proj" : "0", std::make_unique<Linear>(dim, inner_dim))),
      out_(child(names == WeightNames::kDiffusers ? "net.2" : "2", std::make_unique<Linear>(inner_dim, dim))) {}

at::Tensor FeedForward::forward(const at::Tensor& x) const {
  return out_->forward(proj_->forward_gelu_tanh(x));
}

at::Tensor layer_norm_fp32(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, double eps) {
  auto xf = x.to(at::kFloat);
  at::Tensor w = weight.defined() ? weight.to(at::kFloat) : at::Tensor();
  at::Tensor b = bias.defined() ? bias.to(at::kFloat) : at::Tensor();
  return at::layer_norm(xf, {xf.size(-1)}, w, b, eps, /*cudnn_enable=*/true);
}

namespace {

// One row per [..., n] vector. The steps and roundings of LibTorch's (2.11) composition: squares rounded to
// float32, their mean, + eps in float32, 1 / sqrt, x times that, times the weight (both products in float32),
// one rounding to T at the end.
template <typename T>
void rms_norm_rows(const T* x, const T* weight, T* out, int64_t rows, int64_t n, float eps) {
  at::parallel_for(0, rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const T* xr = x + row * n;
      T* outr = out + row * n;
      double sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        const float v = static_cast<float>(xr[j]);
        const float square = v * v;
        sum += square;
      }
      const float mean = static_cast<float>(sum / static_cast<double>(n));
      const float inv = 1.0f / std::sqrt(mean + eps);
      for (int64_t j = 0; j < n; ++j) {
        const float normed = static_cast<float>(xr[j]) * inv;
        outr[j] = static_cast<T>(weight ? normed * static_cast<float>(weight[j]) : normed);
      }
    }
  });
}

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (!x.is_cpu() || (weight.defined() && weight.scalar_type() != x.scalar_type())) {
    return compat::rms_norm(x, weight, eps);
  }
  const int64_t n = x.size(-1);
  OMNI_CHECK(!weight.defined() || (weight.dim() == 1 && weight.size(0) == n), "rms_norm: weight ", weight.sizes(),
             " for rows of ", n);
  const auto xc = x.contiguous();  // [..., n]
  const auto wc = weight.defined() ? weight.contiguous() : weight;
  auto out = at::empty_like(xc);  // [..., n]
  compat::RecordedOp record("omni::rms_norm", {xc, wc});
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, xc.scalar_type(), "rms_norm", [&] {
    rms_norm_rows<scalar_t>(xc.const_data_ptr<scalar_t>(), wc.defined() ? wc.const_data_ptr<scalar_t>() : nullptr,
                            out.mutable_data_ptr<scalar_t>(), n == 0 ? 0 : xc.numel() / n, n, static_cast<float>(eps));
  });
  record.outputs(out);
  return out;
}

at::Tensor embed_patches(const at::Tensor& input, const at::Tensor& weight, const at::Tensor& bias,
                         const std::array<int64_t, 3>& patch) {
  const int64_t batch = input.size(0), cin = input.size(1), pt = patch[0], ph = patch[1], pw = patch[2];
  const int64_t gf = input.size(2) / pt, gh = input.size(3) / ph, gw = input.size(4) / pw;
  auto x = input.reshape({batch, cin, gf, pt, gh, ph, gw, pw});         // [B, C, F', pt, H', ph, W', pw]
  x = x.permute({0, 2, 4, 6, 1, 3, 5, 7});                              // [B, F', H', W', C, pt, ph, pw]
  x = x.reshape({batch, gf * gh * gw, cin * pt * ph * pw});             // [B, S, C*pt*ph*pw]
  const auto w = weight.reshape({weight.size(0), cin * pt * ph * pw});  // [D, C*pt*ph*pw]
  // Each batch row's patches alone (each_batch_row: every product of the model is one CFG branch's).
  return each_batch_row(batch, [&](int64_t b) { return at::linear(x.narrow(0, b, 1), w, bias); });
}

at::Tensor each_batch_row(int64_t batch, const std::function<at::Tensor(int64_t b)>& row_fn) {
  OMNI_CHECK(batch >= 1, "each_batch_row: a batch of ", batch, " rows");
  if (batch == 1) return row_fn(0);
  at::Tensor out;  // [B, ...], allocated from the first row's shape and options
  for (int64_t b = 0; b < batch; ++b) {
    const at::Tensor row = row_fn(b);  // [1, ...]
    OMNI_CHECK(row.dim() >= 1 && row.size(0) == 1, "each_batch_row: row ", b, " gave ", row.sizes(), ", not [1, ...]");
    if (!out.defined()) {
      auto sizes = row.sizes().vec();
      sizes[0] = batch;
      out = at::empty(sizes, row.options());
    }
    OMNI_CHECK(row.sizes().slice(1) == out.sizes().slice(1), "each_batch_row: row ", b, " gave ", row.sizes(),
               ", row 0 ", out.sizes());
    out.narrow(0, b, 1).copy_(row);
  }
  return out;
}

}  // namespace omni::models::wan
