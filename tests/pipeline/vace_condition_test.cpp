// VACE's context pieces that need no VAE (pipeline/vace_condition.h) and a reference image's canvas
// (io::vace_reference_image), each against an independent computation of what diffusers' WanVACEPipeline does:
// prepare_masks as an explicit loop over latent cells and nearest-exact frames, the canvas as a 2 x 2 average (the
// bilinear halving of F.interpolate with align_corners=False) on white. The parity cases
// (tests/e2e/parity, vace-*) hold the whole context to diffusers' own.
#include "pipeline/vace_condition.h"

#include <gtest/gtest.h>

#include <cmath>

#include "io/image_reader.h"

namespace {

TEST(VaceCondition, LatentMaskIsEachCellsPixelsAsChannelsAtNearestExactFrames) {
  const int64_t frames = 9, height = 32, width = 48, sf = 8, tf = 4;
  const int refs = 2;
  const at::Tensor mask = at::rand({1, 3, frames, height, width}, at::TensorOptions().dtype(at::kFloat));
  const at::Tensor got = omni::pipeline::vace_latent_mask(mask, tf, sf, refs);
  const int64_t latent = (frames + tf - 1) / tf;  // 3
  ASSERT_EQ(got.sizes(), at::IntArrayRef({1, sf * sf, refs + latent, height / sf, width / sf}));
  auto g = got.accessor<float, 5>();
  auto m = mask.accessor<float, 5>();
  for (int64_t c = 0; c < sf * sf; ++c)
    for (int64_t t = 0; t < refs + latent; ++t)
      for (int64_t i = 0; i < height / sf; ++i)
        for (int64_t j = 0; j < width / sf; ++j) {
          if (t < refs) {
            ASSERT_EQ(g[0][c][t][i][j], 0.0f);  // the reference frames' mask: zeros
            continue;
          }
          // nearest-exact: source frame floor((t + 0.5) * frames / latent), red channel, pixel (dy, dx) of the cell.
          const auto src = std::min<int64_t>(
              static_cast<int64_t>(std::floor((static_cast<double>(t - refs) + 0.5) * frames / latent)), frames - 1);
          const int64_t dy = c / sf, dx = c % sf;
          ASSERT_EQ(g[0][c][t][i][j], m[0][0][src][i * sf + dy][j * sf + dx]) << c << " " << t << " " << i << " " << j;
        }
}

TEST(VaceCondition, BinaryMaskIsAboveOneHalf) {
  const at::Tensor mask = at::tensor({0.0f, 0.25f, 0.5f, 0.50001f, 1.0f});
  const at::Tensor got = omni::pipeline::vace_binary_mask(mask);
  EXPECT_TRUE(at::equal(got, at::tensor({0.0f, 0.0f, 0.0f, 1.0f, 1.0f})));
}

TEST(VaceReferenceImage, ScaledToFitAndCentredOnWhite) {
  // 48 x 96 pixels (multiples of 8: no resize first) into a 32 x 48 video: scale 0.5, 24 x 48 pasted at row 4.
  const at::Tensor image = at::randint(0, 256, {48, 96, 3}, at::TensorOptions().dtype(at::kByte));
  const at::Tensor got = omni::io::vace_reference_image(image, 32, 48, 8, "ref.png");
  ASSERT_EQ(got.sizes(), at::IntArrayRef({3, 32, 48}));
  const at::Tensor x = image.to(at::kFloat).div(255).mul(2).sub(1).permute({2, 0, 1});  // [3, 48, 96] in [-1, 1]
  const at::Tensor halved = at::avg_pool2d(x.unsqueeze(0), {2, 2})[0];                  // [3, 24, 48]
  EXPECT_TRUE(at::allclose(got.narrow(1, 4, 24), halved, 0, 1e-6));
  EXPECT_TRUE(at::equal(got.narrow(1, 0, 4), at::ones({3, 4, 48})));
  EXPECT_TRUE(at::equal(got.narrow(1, 28, 4), at::ones({3, 4, 48})));
}

}  // namespace
