#include "models/wan_animate_face_encoder.h"

#include <memory>

#include "core/error.h"

namespace omni::models {

namespace {
constexpr int64_t kKernel = 3;

// Causal Conv1d: x [N, C, T] padded at its start with kernel - 1 copies of the first frame (F.pad "replicate").
at::Tensor causal_conv(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, int64_t stride) {
  const at::Tensor padded = at::pad(x, {kKernel - 1, 0}, "replicate");  // [N, C, T + 2]
  return at::conv1d(padded, weight, bias, stride);                      // [N, C', T']
}

// LayerNorm over the channels (no affine, in x's dtype) and SiLU: x [N, C, T] -> [N, T, C].
at::Tensor norm_silu(const at::Tensor& x, int64_t channels, double eps) {
  return at::silu(at::layer_norm(x.permute({0, 2, 1}), {channels}, {}, {}, eps));
}
}  // namespace

WanAnimateFaceEncoder::WanAnimateFaceEncoder(int64_t in_dim, int64_t out_dim, int64_t hidden_dim, int64_t num_heads,
                                             double eps)
    : hidden_(hidden_dim),
      heads_(num_heads),
      eps_(eps),
      conv1_weight_(param("conv1_local.weight", {hidden_dim * num_heads, in_dim, kKernel})),
      conv1_bias_(param("conv1_local.bias", {hidden_dim * num_heads})),
      conv2_weight_(param("conv2.weight", {hidden_dim, hidden_dim, kKernel})),
      conv2_bias_(param("conv2.bias", {hidden_dim})),
      conv3_weight_(param("conv3.weight", {hidden_dim, hidden_dim, kKernel})),
      conv3_bias_(param("conv3.bias", {hidden_dim})),
      out_proj_(child("out_proj", std::make_unique<wan::Linear>(hidden_dim, out_dim))),
      padding_tokens_(param("padding_tokens", {1, 1, 1, out_dim})) {}

at::Tensor WanAnimateFaceEncoder::forward(const at::Tensor& motion) const {
  OMNI_CHECK(motion.dim() == 3 && motion.size(2) == conv1_weight_.size(1), "the face encoder takes [B, T, ",
             conv1_weight_.size(1), "], got ", motion.sizes());
  const int64_t batch = motion.size(0);
  at::Tensor x = causal_conv(motion.permute({0, 2, 1}), conv1_weight_, conv1_bias_, 1);            // [B, heads * C, T]
  x = x.unflatten(1, {heads_, hidden_}).flatten(0, 1);                                             // [B * heads, C, T]
  x = norm_silu(x, hidden_, eps_);                                                                 // [B * heads, T, C]
  x = norm_silu(causal_conv(x.permute({0, 2, 1}), conv2_weight_, conv2_bias_, 2), hidden_, eps_);  // T / 2
  x = norm_silu(causal_conv(x.permute({0, 2, 1}), conv3_weight_, conv3_bias_, 2), hidden_, eps_);  // T / 4
  x = out_proj_->forward(x);                                                                       // [B * heads, T', D]
  x = x.unflatten(0, {batch, heads_}).permute({0, 2, 1, 3});                                       // [B, T', heads, D]
  const auto padding = padding_tokens_.to(x.scalar_type()).expand({batch, x.size(1), 1, x.size(3)});
  return at::cat({x, padding}, 2);  // [B, T', heads + 1, D]
}

}  // namespace omni::models
