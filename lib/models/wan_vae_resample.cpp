#include "models/wan_vae_resample.h"

#include "core/error.h"

namespace omni::models {

WanResample::WanResample(int64_t dim, WanResampleMode mode, int64_t upsample_out_dim) : mode_(mode) {
  switch (mode) {
    case WanResampleMode::kUpsample2d:
      resample_ = child("resample.1", std::make_unique<WanConv2d>(dim, upsample_out_dim, 3, 1, 1));
      break;
    case WanResampleMode::kUpsample3d:
      resample_ = child("resample.1", std::make_unique<WanConv2d>(dim, upsample_out_dim, 3, 1, 1));
      // Doubles the channels; the two halves become the even and odd output frames.
      time_conv_ = child("time_conv", std::make_unique<WanCausalConv3d>(dim, dim * 2, std::array<int64_t, 3>{3, 1, 1},
                                                                        std::array<int64_t, 3>{1, 1, 1},
                                                                        std::array<int64_t, 3>{1, 0, 0}));
      break;
    case WanResampleMode::kDownsample2d:
      resample_ = child("resample.1", std::make_unique<WanConv2d>(dim, dim, 3, 2, 0));
      break;
    case WanResampleMode::kDownsample3d:
      resample_ = child("resample.1", std::make_unique<WanConv2d>(dim, dim, 3, 2, 0));
      time_conv_ = child("time_conv", std::make_unique<WanCausalConv3d>(dim, dim, std::array<int64_t, 3>{3, 1, 1},
                                                                        std::array<int64_t, 3>{2, 1, 1},
                                                                        std::array<int64_t, 3>{0, 0, 0}));
      break;
  }
}

at::Tensor WanResample::spatial(const at::Tensor& x) const {
  const int64_t b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  at::Tensor y = x.permute({0, 2, 1, 3, 4}).reshape({b * t, c, h, w});  // [B*T, C, H, W]
  if (mode_ == WanResampleMode::kUpsample2d || mode_ == WanResampleMode::kUpsample3d) {
    // nearest-exact at exactly 2x picks source pixel i / 2: a broadcast copy, exact in every dtype.
    y = y.view({b * t, c, h, 1, w, 1}).expand({b * t, c, h, 2, w, 2}).reshape({b * t, c, 2 * h, 2 * w});
  } else {
    y = at::constant_pad_nd(y, {0, 1, 0, 1});  // ZeroPad2d((0, 1, 0, 1)): right and bottom only
  }
  y = resample_->forward(y);                                                        // [B*T, C', H', W']
  return y.view({b, t, y.size(1), y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4});  // [B, C', T, H', W']
}

at::Tensor WanResample::forward(const at::Tensor& x, WanFeatCache& cache) const {
  at::Tensor y = x;
  if (mode_ == WanResampleMode::kUpsample3d) {
    auto& slot = cache.take();
    if (slot.empty()) {
      // First chunk: no time upsampling (frame 0 of the clip maps to frame 0 alone); mark the slot.
      slot.rep = true;
    } else {
      const int64_t b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
      at::Tensor next = wan_next_history(x, slot);
      // After the marker the history is zeros, exactly the padding the skipped first call would have seen.
      if (slot.rep && next.size(2) < 2) next = at::cat({at::zeros_like(next), next}, 2);
      at::Tensor doubled = slot.rep ? time_conv_->forward(x) : time_conv_->forward(x, slot.frames);  // [B, 2C, T, H, W]
      slot.frames = std::move(next);
      slot.rep = false;
      // [B, 2, C, T, H, W] -> [B, C, T, 2, H, W] -> [B, C, 2T, H, W]: channel half s becomes frame 2k + s.
      y = doubled.view({b, 2, c, t, h, w}).permute({0, 2, 3, 1, 4, 5}).reshape({b, c, 2 * t, h, w});
    }
  }
  y = spatial(y);
  if (mode_ == WanResampleMode::kDownsample3d) {
    auto& slot = cache.take();
    const int64_t t = y.size(2);
    if (!slot.frames.defined()) {
      // First chunk: kept as is. Only its last frame is ever read back, so only that is stored.
      slot.frames = y.narrow(2, t - 1, 1).clone();
    } else {
      at::Tensor next = y.narrow(2, t - 1, 1).clone();
      const auto& prev = slot.frames;
      y = time_conv_->forward(at::cat({prev.narrow(2, prev.size(2) - 1, 1).to(y.device()), y}, 2));
      slot.frames = std::move(next);
    }
  }
  return y;
}

at::Tensor wan_avg_down_3d(const at::Tensor& x, int64_t out_channels, int64_t factor_t, int64_t factor_s) {
  const int64_t factor = factor_t * factor_s * factor_s;
  const int64_t c = x.size(1);
  OMNI_CHECK(c * factor % out_channels == 0, "AvgDown3D: ", c, " x ", factor, " channels do not split into ",
             out_channels, " groups");
  const int64_t group = c * factor / out_channels;
  if (factor == 1 && group == 1) return x;
  at::Tensor y = x;
  const int64_t pad_t = (factor_t - x.size(2) % factor_t) % factor_t;
  if (pad_t > 0) y = at::constant_pad_nd(y, {0, 0, 0, 0, pad_t, 0});
  const int64_t b = y.size(0), t = y.size(2) / factor_t, h = y.size(3) / factor_s, w = y.size(4) / factor_s;
  y = y.reshape({b, c, t, factor_t, h, factor_s, w, factor_s})
          .permute({0, 1, 3, 5, 7, 2, 4, 6})            // [B, C, ft, fs, fs, T', H', W']
          .reshape({b, out_channels, group, t, h, w});  // [B, Cout, group, T', H', W']
  return y.mean(2);                                     // [B, Cout, T', H', W']
}

at::Tensor wan_dup_up_3d(const at::Tensor& x, int64_t out_channels, int64_t factor_t, int64_t factor_s,
                         bool first_chunk) {
  const int64_t factor = factor_t * factor_s * factor_s;
  const int64_t b = x.size(0), c = x.size(1), t = x.size(2), h = x.size(3), w = x.size(4);
  OMNI_CHECK(out_channels * factor % c == 0, "DupUp3D: ", out_channels, " x ", factor,
             " channels are not a multiple of ", c);
  const int64_t repeats = out_channels * factor / c;
  // repeat_interleave over channels: [B, C, r, T, H, W] -> [B, C*r, T, H, W]
  at::Tensor y = x.unsqueeze(2).expand({b, c, repeats, t, h, w});
  y = y.reshape({b, out_channels, factor_t, factor_s, factor_s, t, h, w})
          .permute({0, 1, 5, 2, 6, 3, 7, 4})  // [B, Cout, T, ft, H, fs, W, fs]
          .reshape({b, out_channels, t * factor_t, h * factor_s, w * factor_s});
  if (first_chunk && factor_t > 1) y = y.narrow(2, factor_t - 1, y.size(2) - (factor_t - 1));
  return y;
}

}  // namespace omni::models
