// diffusers' WanAnimateMotionEncoder (Wan2.2-Animate's motion encoder: LIA's appearance encoder and its linear
// motion decomposition): one face crop [n, 3, size, size] -> one motion vector [n, out_dim].
//
//   conv_in            MotionConv2d 3 -> channels[size], 1x1, with its fused leaky ReLU (act_fn.bias)
//   res_blocks.<i>     MotionEncoderResBlock, one per halving of the crop down to 4 x 4: conv1 (3x3), conv2 (blur,
//                      then 3x3 stride 2) with fused leaky ReLUs; conv_skip (blur, then 1x1 stride 2, no bias);
//                      (conv2 + conv_skip) / sqrt(2)
//   conv_out           MotionConv2d -> style_dim, 4x4, no bias, no activation: [n, style_dim, 1, 1]
//   motion_network.<j> MotionLinear (weight times 1/sqrt(in), bias, no activation): style_dim -> style_dim
//                      (motion_blocks - 1 of them), then style_dim -> motion_dim
//   motion_synthesis_weight [out_dim, motion_dim] float32 (_keep_in_fp32_modules): its QR factor's Q, the
//                      motion directions, weighted by the motion features in float32
// MotionConv2d and MotionLinear scale their weights by 1/sqrt(fan_in) in the weight's dtype at every call, as
// StyleGAN2's equalized learning rate does; the blur is the [1, 3, 3, 1] outer product, normalized.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/module.h"

namespace omni::models {

// One MotionConv2d: an optional blur (FIR [1, 3, 3, 1] per channel), the scaled convolution, and either a bias
// or the fused leaky ReLU (x + act_fn.bias, leaky_relu 0.2, times sqrt(2)).
class MotionConv2d : public Module {
 public:
  MotionConv2d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
               bool bias, bool blur, bool activation);
  at::Tensor forward(const at::Tensor& x) const;  // [n, C_in, H, W] -> [n, C_out, H', W'] in the weight's dtype

 private:
  int64_t in_channels_, kernel_size_, stride_, padding_;
  bool blur_, activation_;
  at::Tensor& weight_;              // [C_out, C_in, k, k]
  at::Tensor* bias_ = nullptr;      // [C_out]: no activation and bias
  at::Tensor* act_bias_ = nullptr;  // [C_out]: act_fn.bias
};

class WanAnimateMotionEncoder : public Module {
 public:
  // channels: the width at each crop size (keys "4", "8", ... as strings, as the config holds them); empty:
  // diffusers' table (512 down to 32 at 512 pixels).
  WanAnimateMotionEncoder(int64_t size, int64_t style_dim, int64_t motion_dim, int64_t out_dim,
                          const std::map<std::string, int64_t>& channels, int64_t motion_blocks = 5);

  // face [n, 3, size, size] -> [n, out_dim] in face's dtype (the convolutions run in the weights' dtype).
  at::Tensor forward(const at::Tensor& face) const;

  int64_t size() const { return size_; }
  // diffusers' WAN_ANIMATE_MOTION_ENCODER_CHANNEL_SIZES.
  static const std::map<std::string, int64_t>& default_channels();

 private:
  struct ResBlock {
    MotionConv2d* conv1;
    MotionConv2d* conv2;
    MotionConv2d* conv_skip;
  };
  int64_t size_;
  MotionConv2d* conv_in_;
  std::vector<ResBlock> res_blocks_;
  MotionConv2d* conv_out_;
  std::vector<std::pair<at::Tensor*, at::Tensor*>> motion_network_;  // (weight [out, in], bias [out])
  at::Tensor& motion_synthesis_weight_;                              // [out_dim, motion_dim] float32
};

}  // namespace omni::models
