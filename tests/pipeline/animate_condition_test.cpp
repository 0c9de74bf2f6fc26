// Wan2.2-Animate's conditioning pieces that need no VAE (pipeline/animate_condition.h), each against an
// independent computation of what diffusers' WanAnimatePipeline does: pad_video_frames as its own walk (an index
// that turns at either end), get_i2v_mask as an explicit loop over latent frames and their pixel frames. The
// parity cases (tests/e2e/parity, animate-*) hold the whole condition to diffusers' own.
#include "pipeline/animate_condition.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

// pad_video_frames: walk the frames, turning at either end; the walk's i-th frame.
std::vector<int64_t> padded_walk(int64_t n, int64_t target) {
  std::vector<int64_t> out;
  int64_t idx = 0;
  bool flip = false;
  while (static_cast<int64_t>(out.size()) < target) {
    out.push_back(idx);
    idx += flip ? -1 : 1;
    if (idx == 0 || idx == n - 1) flip = !flip;
  }
  return out;
}

TEST(AnimateCondition, ReflectedFrameIsDiffusersPadding) {
  for (int64_t n = 2; n <= 9; ++n) {
    const std::vector<int64_t> walk = padded_walk(n, 5 * n + 3);
    for (size_t j = 0; j < walk.size(); ++j)
      ASSERT_EQ(omni::pipeline::reflected_frame(static_cast<int64_t>(j), n), walk[j]) << "n " << n << " j " << j;
  }
  // diffusers fails on one frame; the padding repeats it.
  for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(omni::pipeline::reflected_frame(j, 1), 0);
}

// get_i2v_mask as loops: pixel frame f of the segment ((T - 1) tf + 1 of them) belongs to latent frame
// (f + tf - 1) / tf, as channel (f - 1) % tf (frame 0: latent frame 0, all tf channels).
TEST(AnimateCondition, LatentMaskPutsEachLatentFramesPixelFramesInItsChannels) {
  const int64_t latent = 3, tf = 4, h = 2, w = 3, frames = (latent - 1) * tf + 1;
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  for (const bool with_pixels : {false, true}) {
    for (const int64_t mask_len : {0, 1, 5}) {
      const at::Tensor pixels = with_pixels ? at::rand({1, 1, frames, h, w}, f32) : at::Tensor();
      const at::Tensor got = omni::pipeline::animate_latent_mask(pixels, latent, h, w, mask_len, tf, f32);
      ASSERT_EQ(got.sizes(), at::IntArrayRef({1, tf, latent, h, w}));
      auto g = got.accessor<float, 5>();
      for (int64_t t = 0; t < latent; ++t)
        for (int64_t c = 0; c < tf; ++c) {
          const int64_t f = t == 0 ? 0 : (t - 1) * tf + 1 + c;  // the pixel frame this channel holds
          for (int64_t i = 0; i < h; ++i)
            for (int64_t j = 0; j < w; ++j) {
              const float want = f < mask_len ? 1.0f : with_pixels ? pixels[0][0][f][i][j].item<float>() : 0.0f;
              ASSERT_EQ(g[0][c][t][i][j], want) << "t " << t << " c " << c << " len " << mask_len;
            }
        }
    }
  }
}

TEST(AnimateCondition, BackgroundMaskIsOneMinusTheNearestPixel) {
  const at::Tensor mask = at::rand({1, 1, 3, 16, 24}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor got = omni::pipeline::animate_background_mask(mask, 2, 3);
  ASSERT_EQ(got.sizes(), at::IntArrayRef({1, 1, 3, 2, 3}));
  // F.interpolate(mode="nearest") by 8: source pixel 8 i of each side.
  for (int64_t f = 0; f < 3; ++f)
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < 3; ++j)
        EXPECT_EQ(got[0][0][f][i][j].item<float>(), 1.0f - mask[0][0][f][8 * i][8 * j].item<float>());
}

}  // namespace
