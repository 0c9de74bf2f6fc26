#include "models/wan_transformer_layers.h"

#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <cmath>

#include "core/error.h"
#include "core/torch_compat.h"

namespace omni::models::wan {

Linear::Linear(int64_t in_features, int64_t out_features, ParamDtype rule)
    : in_(in_features),
      out_(out_features),
      weight_(param("weight", {out_features, in_features}, rule)),
      bias_(param("bias", {out_features}, rule)) {}

at::Tensor Linear::forward(const at::Tensor& x) const {
  OMNI_CHECK(weight_.defined(), "Linear used before its weights were loaded");
  OMNI_CHECK(x.scalar_type() == weight_.scalar_type(), "Linear: input dtype ", x.scalar_type(),
             " differs from weight dtype ", weight_.scalar_type());
  return at::linear(x, weight_, bias_);
}

at::Tensor Linear::forward_gelu_tanh(const at::Tensor& x) const {
  OMNI_CHECK(weight_.defined(), "Linear used before its weights were loaded");
  OMNI_CHECK(x.scalar_type() == weight_.scalar_type(), "Linear: input dtype ", x.scalar_type(),
             " differs from weight dtype ", weight_.scalar_type());
  if (x.is_cuda() && x.scalar_type() != at::kFloat) {
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
  at::Tensor h = at::linear(x, weight_, bias_);  // [B, S, out]
  return at::gelu_(h, "tanh");
}

FeedForward::FeedForward(int64_t dim, int64_t inner_dim)
    : proj_(child("net.0.proj", std::make_unique<Linear>(dim, inner_dim))),
      out_(child("net.2", std::make_unique<Linear>(inner_dim, dim))) {}

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

}  // namespace omni::models::wan
