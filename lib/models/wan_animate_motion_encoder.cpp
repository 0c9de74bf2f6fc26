#include "models/wan_animate_motion_encoder.h"

#include <cmath>
#include <memory>

#include "core/error.h"

namespace omni::models {

namespace {
constexpr double kLeakySlope = 0.2;
const double kSqrt2 = std::sqrt(2.0);
// StyleGAN2's blur: [1, 3, 3, 1] outer product over its sum (64); every entry is exact in bfloat16.
constexpr int64_t kBlurTaps = 4;

at::Tensor blur_kernel(int64_t channels, const at::TensorOptions& options) {
  const auto taps = at::tensor({1.0, 3.0, 3.0, 1.0}, options.dtype(at::kFloat));
  auto k = (taps.unsqueeze(0) * taps.unsqueeze(1));  // [4, 4]
  k = k / k.sum();
  return k.to(options.dtype()).expand({channels, 1, kBlurTaps, kBlurTaps});  // [C, 1, 4, 4], one filter a channel
}

// The fused leaky ReLU: bias per channel (dim 1), leaky ReLU, times sqrt(2).
at::Tensor fused_leaky_relu(const at::Tensor& x, const at::Tensor& bias) {
  std::vector<int64_t> shape(x.dim(), 1);
  shape[1] = bias.size(0);
  return at::leaky_relu(x + bias.reshape(shape), kLeakySlope) * kSqrt2;
}
}  // namespace

MotionConv2d::MotionConv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
                           int64_t padding, bool bias, bool blur, bool activation)
    : in_channels_(in_channels),
      kernel_size_(kernel_size),
      stride_(stride),
      padding_(padding),
      blur_(blur),
      activation_(activation),
      weight_(param("weight", {out_channels, in_channels, kernel_size, kernel_size})) {
  // With the activation the bias is the activation's (act_fn.bias); without it, an ordinary one when asked.
  if (activation)
    act_bias_ = &param("act_fn.bias", {out_channels});
  else if (bias)
    bias_ = &param("bias", {out_channels});
}

at::Tensor MotionConv2d::forward(const at::Tensor& input) const {
  at::Tensor x = input;
  if (blur_) {
    // diffusers pads by ((p + 1) / 2, p / 2) as F.conv2d's (height, width) padding, p = taps - stride + k - 1.
    const int64_t p = (kBlurTaps - stride_) + (kernel_size_ - 1);
    x = at::conv2d(x, blur_kernel(in_channels_, x.options()), {}, 1, {(p + 1) / 2, p / 2}, 1, in_channels_);
  }
  x = x.to(weight_.scalar_type());
  // The scaled weight in the weight's dtype, as diffusers' `self.weight * self.scale`.
  const at::Tensor w = weight_ * (1.0 / std::sqrt(static_cast<double>(in_channels_ * kernel_size_ * kernel_size_)));
  x = at::conv2d(x, w, bias_ ? *bias_ : at::Tensor(), stride_, padding_);
  return activation_ ? fused_leaky_relu(x, *act_bias_) : x;
}

const std::map<std::string, int64_t>& WanAnimateMotionEncoder::default_channels() {
  static const std::map<std::string, int64_t> table = {{"4", 512},   {"8", 512},  {"16", 512}, {"32", 512}, {"64", 256},
                                                       {"128", 128}, {"256", 64}, {"512", 32}, {"1024", 16}};
  return table;
}

WanAnimateMotionEncoder::WanAnimateMotionEncoder(int64_t size, int64_t style_dim, int64_t motion_dim, int64_t out_dim,
                                                 const std::map<std::string, int64_t>& given, int64_t motion_blocks)
    : size_(size),
      motion_synthesis_weight_(param("motion_synthesis_weight", {out_dim, motion_dim}, ParamDtype::kFloat32)) {
  const auto& channels = given.empty() ? default_channels() : given;
  const auto width = [&](int64_t s) {
    const auto it = channels.find(std::to_string(s));
    OMNI_CHECK_INPUT(it != channels.end() && it->second > 0, "motion_encoder_channel_sizes has no positive width for ",
                     s, " pixels (needed for motion_encoder_size ", size, ")");
    return it->second;
  };
  // size: a power of two of at least 8 (WanTransformerConfig::validate).
  conv_in_ = child("conv_in", std::make_unique<MotionConv2d>(3, width(size), 1, 1, 0, true, false, true));
  int64_t in = width(size);
  int index = 0;
  // One block per halving, from size down to 4 pixels (diffusers: for i in range(log2(size), 2, -1)).
  for (int64_t s = size; s > 4; s /= 2, ++index) {
    const int64_t out = width(s / 2);
    const std::string name = "res_blocks." + std::to_string(index) + ".";
    ResBlock b;
    b.conv1 = child(name + "conv1", std::make_unique<MotionConv2d>(in, in, 3, 1, 1, true, false, true));
    b.conv2 = child(name + "conv2", std::make_unique<MotionConv2d>(in, out, 3, 2, 0, true, true, true));
    b.conv_skip = child(name + "conv_skip", std::make_unique<MotionConv2d>(in, out, 1, 2, 0, false, true, false));
    res_blocks_.push_back(b);
    in = out;
  }
  conv_out_ = child("conv_out", std::make_unique<MotionConv2d>(in, style_dim, 4, 1, 0, false, false, false));
  for (int64_t j = 0; j < motion_blocks; ++j) {
    const int64_t out = j + 1 < motion_blocks ? style_dim : motion_dim;
    const std::string name = "motion_network." + std::to_string(j) + ".";
    motion_network_.emplace_back(&param(name + "weight", {out, style_dim}), &param(name + "bias", {out}));
  }
}

at::Tensor WanAnimateMotionEncoder::forward(const at::Tensor& face) const {
  OMNI_CHECK(face.dim() == 4 && face.size(1) == 3 && face.size(2) == size_ && face.size(3) == size_,
             "the motion encoder takes face crops [n, 3, ", size_, ", ", size_, "], got ", face.sizes());
  at::Tensor x = conv_in_->forward(face);  // [n, C, size, size]
  for (const auto& b : res_blocks_) {
    const at::Tensor main = b.conv2->forward(b.conv1->forward(x));  // [n, C', s / 2, s / 2]
    x = (main + b.conv_skip->forward(x)) / kSqrt2;
  }
  x = conv_out_->forward(x);                    // [n, style_dim, 1, 1]
  at::Tensor feat = x.squeeze(-1).squeeze(-1);  // [n, style_dim]
  for (const auto& [w, bias] : motion_network_) {
    feat = at::linear(feat, *w * (1.0 / std::sqrt(static_cast<double>(w->size(1)))), *bias);
  }
  // Linear motion decomposition in float32: Q of the directions' QR (weight + 1e-8, as diffusers), each row's
  // motion features times Q's columns. diffusers multiplies diag(feat) by Q^T and sums over the motion
  // dimension: the same exact products, summed by the same reduction here.
  const at::ScalarType dtype = feat.scalar_type();
  const at::Tensor q = std::get<0>(at::linalg_qr((motion_synthesis_weight_ + 1e-8).to(at::kFloat)));  // [out, m]
  const at::Tensor f = feat.to(at::kFloat);                                                           // [n, m]
  const at::Tensor products = f.unsqueeze(2) * q.t().unsqueeze(0);                                    // [n, m, out]
  return products.sum(1).to(dtype);                                                                   // [n, out]
}

}  // namespace omni::models
