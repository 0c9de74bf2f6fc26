#include "models/wan_s2v_audio_encoder.h"

#include "core/error.h"

namespace omni::models {

namespace {
constexpr double kNormEps = 1e-6;  // MotionEncoder_tc's LayerNorms

// LayerNorm over the last dimension (no affine), then SiLU.
at::Tensor norm_silu(const at::Tensor& x) {
  return at::silu(at::layer_norm(x, {x.size(-1)}, {}, {}, kNormEps));
}
}  // namespace

WanS2VAudioEncoder::WanS2VAudioEncoder(int64_t audio_dim, int64_t dim, int64_t num_token, int64_t layers)
    : dim_(dim),
      num_token_(num_token),
      layers_(layers),
      weights_(param("weights", {1, layers, 1, 1}, ParamDtype::kFloat32)),
      conv1_local_(conv("encoder.conv1_local.conv", audio_dim, dim / 4 * num_token, 1)),
      conv1_global_(conv("encoder.conv1_global.conv", audio_dim, dim / 4, 1)),
      conv2_(conv("encoder.conv2.conv", dim / 4, dim / 2, 2)),
      conv3_(conv("encoder.conv3.conv", dim / 2, dim, 2)),
      final_linear_(child("encoder.final_linear", std::make_unique<wan::Linear>(dim, dim, ParamDtype::kFloat32))),
      padding_tokens_(param("encoder.padding_tokens", {1, 1, 1, dim}, ParamDtype::kFloat32)) {}

WanS2VAudioEncoder::CausalConv WanS2VAudioEncoder::conv(const std::string& name, int64_t in, int64_t out,
                                                        int64_t stride) {
  return {&param(name + ".weight", {out, in, 3}, ParamDtype::kFloat32),
          &param(name + ".bias", {out}, ParamDtype::kFloat32), stride};
}

at::Tensor WanS2VAudioEncoder::causal(const CausalConv& c, const at::Tensor& x) {
  // x [N, C, T]: the first frame repeated twice on the left (replicate padding), then the convolution:
  // [N, C', floor((T - 1) / stride) + 1].
  return at::conv1d(at::pad(x, {2, 0}, "replicate"), *c.weight, *c.bias, c.stride);
}

at::Tensor WanS2VAudioEncoder::downsample(const at::Tensor& x) const {
  auto h = causal(conv2_, x);                        // [N, D/2, T1]
  h = norm_silu(h.transpose(1, 2)).transpose(1, 2);  // [N, D/2, T1]
  h = causal(conv3_, h);                             // [N, D, T']
  return norm_silu(h.transpose(1, 2));               // [N, T', D]
}

AudioTokens WanS2VAudioEncoder::forward(const at::Tensor& features) const {
  OMNI_CHECK(features.dim() == 4 && features.size(0) == 1 && features.size(1) == layers_ &&
                 features.size(2) == conv1_local_.weight->size(1),
             "S2V audio encoder: features must be [1, ", layers_, ", ", conv1_local_.weight->size(1), ", T], got ",
             features.sizes());
  const auto a = features.to(weights_.device(), at::kFloat);  // [1, L, A, Ta]
  // The layers' weighted mean: each layer's product divided by the weights' sum, then summed (Wan's order).
  const auto w = at::silu(weights_);              // [1, L, 1, 1]
  const auto w_sum = w.sum(1, /*keepdim=*/true);  // [1, 1, 1, 1]
  const auto f = ((a * w) / w_sum).sum(1);        // [1, A, Ta]

  // Local path: n heads of D/4 channels each, head-major ('b (n c) t -> (b n) t c').
  const int64_t quarter = dim_ / 4;
  auto local = causal(conv1_local_, f);                           // [1, n D/4, Ta]
  local = local.view({num_token_, quarter, -1}).transpose(1, 2);  // [n, Ta, D/4]
  local = downsample(norm_silu(local).transpose(1, 2));           // [n, T', D]
  const int64_t frames = local.size(1);
  local = local.transpose(0, 1).unsqueeze(0);                         // [1, T', n, D]
  const auto padding = padding_tokens_.expand({1, frames, 1, dim_});  // [1, T', 1, D]
  AudioTokens out;
  out.local = at::cat({local, padding}, 2);  // [1, T', n + 1, D]

  // Global path (AdaLN): one head of D/4 channels, then final_linear.
  auto global = causal(conv1_global_, f);                                  // [1, D/4, Ta]
  global = downsample(norm_silu(global.transpose(1, 2)).transpose(1, 2));  // [1, T', D]
  out.global = final_linear_->forward(global).unsqueeze(2);                // [1, T', 1, D]
  return out;
}

}  // namespace omni::models
