#include "models/wan_vae_causal_conv3d.h"

#include "core/error.h"
#include "models/wan_vae_bands.h"

namespace omni::models {

namespace {
constexpr int64_t kCacheFrames = 2;  // diffusers' CACHE_T
}  // namespace

WanFeatCache::Slot& WanFeatCache::take() {
  // Slots are created on first use, so the cache needs no count of the model's cached layers up front.
  if (next_ == slots_.size()) slots_.emplace_back();
  return slots_[next_++];
}

at::Tensor wan_next_history(const at::Tensor& x, const WanFeatCache::Slot& slot) {
  const int64_t t = x.size(2);
  // clone: a view would keep the whole chunk alive until the next one.
  at::Tensor last = x.narrow(2, std::max<int64_t>(t - kCacheFrames, 0), std::min(t, kCacheFrames)).clone();
  if (last.size(2) < kCacheFrames && slot.frames.defined()) {
    const auto& prev = slot.frames;
    last = at::cat({prev.narrow(2, prev.size(2) - 1, 1).to(last.device()), last}, 2);  // [B, C, 2, H, W]
  }
  return last;
}

WanCausalConv3d::WanCausalConv3d(int64_t in_channels, int64_t out_channels, std::array<int64_t, 3> kernel,
                                 std::array<int64_t, 3> stride, std::array<int64_t, 3> padding)
    : in_channels_(in_channels), out_channels_(out_channels), stride_(stride), padding_(padding) {
  weight_ = &param("weight", {out_channels, in_channels, kernel[0], kernel[1], kernel[2]});
  bias_ = &param("bias", {out_channels});
}

at::Tensor WanCausalConv3d::forward(const at::Tensor& x, const at::Tensor& history) const {
  int64_t front = 2 * padding_[0];  // causal: all time padding goes in front of the first frame
  at::Tensor input = x;
  if (history.defined() && front > 0) {
    input = at::cat({history.to(x.device()), x}, 2);  // [B, C, Th + T, H, W]
    front -= history.size(2);
  }
  if (front > 0) input = at::constant_pad_nd(input, {0, 0, 0, 0, front, 0});
  // Spatial padding is symmetric zeros, which the convolution applies itself (no padded copy); in a banded
  // decode the rows come from the neighbouring bands instead.
  int64_t pad_h = padding_[1];
  if (const VaeBands* bands = current_vae_bands(); bands != nullptr && pad_h > 0) {
    input = bands->with_halo(input, 3, pad_h);  // [B, C, T', pad + H + pad, W]
    pad_h = 0;
  }
  return at::conv3d(input, *weight_, *bias_, at::IntArrayRef(stride_.data(), 3),
                    at::IntArrayRef({int64_t{0}, pad_h, padding_[2]}));
}

at::Tensor WanCausalConv3d::forward_cached(const at::Tensor& x, WanFeatCache& cache) const {
  auto& slot = cache.take();
  OMNI_CHECK(!slot.rep, "WanCausalConv3d: cache slot holds an upsample marker; layers were called out of order");
  at::Tensor next = wan_next_history(x, slot);
  at::Tensor out = forward(x, slot.frames);
  slot.frames = std::move(next);
  return out;
}

WanConv2d::WanConv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding)
    : stride_(stride), padding_(padding) {
  weight_ = &param("weight", {out_channels, in_channels, kernel, kernel});
  bias_ = &param("bias", {out_channels});
}

at::Tensor WanConv2d::forward(const at::Tensor& x) const {
  if (const VaeBands* bands = current_vae_bands(); bands != nullptr && padding_ > 0) {
    OMNI_CHECK(stride_ == 1, "WanConv2d: a banded decode has no strided convolution");
    return at::conv2d(bands->with_halo(x, 2, padding_), *weight_, *bias_, at::IntArrayRef({stride_, stride_}),
                      at::IntArrayRef({int64_t{0}, padding_}));  // [N, C, pad + H + pad, W] -> [N, C', H, W]
  }
  return at::conv2d(x, *weight_, *bias_, at::IntArrayRef({stride_, stride_}), at::IntArrayRef({padding_, padding_}));
}

}  // namespace omni::models
