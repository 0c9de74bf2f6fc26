// omni-compare's SSIM (apps/omni-compare/ssim.h) against tools/reference/ssim_reference.py, an independent numpy
// implementation of the definition (which agrees with scikit-image's structural_similarity to 1e-13; see the
// script). Runs the reference environment's python (tools/reference/setup.sh); without it the test fails.
//
// The bound: both sides compute in float64 from the same inputs (uint8, or float32 frames, exact in float64), the
// same formula in a different summation order. Each filtered moment is a sum of 11 x 11 weighted terms, so it
// differs by at most ~22 eps of its magnitude: for E[x^2] ~ L^2 that is ~22 * 1.1e-16 * L^2 ~ 2.4e-15 L^2. The
// (co)variances inherit that absolute error (E[x^2] - E[x]^2 cancels, it does not amplify), and enter the map
// divided by at least C2 = (0.03 L)^2 = 9e-4 L^2: ~3e-12 per term, ~1e-11 per map value with the four factors;
// averaging does not grow it (plus n eps ~ 1e-12 for n ~ 1e4 summed values). So 1e-9 leaves a margin of 100.
// Measured: below 1e-14 on these cases.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/video_reader.h"
#include "io/video_writer.h"
#include "media_test_util.h"
#include "ssim.h"

namespace omni::media_test {
namespace {

constexpr double kBound = 1e-9;

// The reference's JSON for frames `key` of files a and b ([F, H, W, C]).
nlohmann::json reference(const std::string& a, const std::string& b, double data_range) {
  std::ostringstream cmd;
  cmd << "'" << OMNI_REFERENCE_PYTHON << "' '" << OMNI_SSIM_REFERENCE << "' '" << a << "' '" << b << "' --data-range "
      << data_range;
  std::string out;
  const int rc = run_command(cmd.str(), &out, /*merge=*/false);
  EXPECT_EQ(rc, 0) << cmd.str() << "\n" << out << "\n(the reference environment: tools/reference/setup.sh)";
  if (rc != 0) return nullptr;
  return nlohmann::json::parse(out);
}

// Deterministic uint8 test images [H, W, 3].
at::Tensor noise_image(int64_t h, int64_t w, uint64_t seed) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  return at::randint(0, 256, {h, w, 3}, g, at::kByte);
}

at::Tensor gradient_image(int64_t h, int64_t w) {
  at::Tensor y = at::arange(h, at::kLong).view({h, 1}).expand({h, w});
  at::Tensor x = at::arange(w, at::kLong).view({1, w}).expand({h, w});
  return at::stack({x * 255 / std::max<int64_t>(w - 1, 1), y * 255 / std::max<int64_t>(h - 1, 1), (x + y) * 7 % 256}, 2)
      .to(at::kByte);
}

// 5x5 box blur, edges clamped, rounded back to uint8.
at::Tensor box_blur(const at::Tensor& img) {
  const int64_t h = img.size(0), w = img.size(1);
  at::Tensor x = img.to(at::kDouble);
  at::Tensor out = at::zeros_like(x);
  for (int dy = -2; dy <= 2; ++dy)
    for (int dx = -2; dx <= 2; ++dx) {
      at::Tensor ys = (at::arange(h, at::kLong) + dy).clamp(0, h - 1),
                 xs = (at::arange(w, at::kLong) + dx).clamp(0, w - 1);
      out += x.index_select(0, ys).index_select(1, xs);
    }
  return (out / 25).round().to(at::kByte);
}

struct Case {
  std::string name;
  at::Tensor a, b;
};

std::vector<Case> cases(int64_t h, int64_t w, uint64_t seed) {
  const at::Tensor base = noise_image(h, w, seed), grad = gradient_image(h, w);
  at::Generator g = at::detail::createCPUGenerator(seed + 1000);
  const at::Tensor noisy =
      (grad.to(at::kLong) + at::randint(-30, 31, {h, w, 3}, g, at::kLong)).clamp(0, 255).to(at::kByte);
  auto full = [&](int v) { return at::full({h, w, 3}, v, at::kByte); };
  return {
      {"identical", base, base.clone()},
      {"noise", noisy, grad},
      {"blur", box_blur(base), base},
      {"shift", base.roll({1}, {1}), base},
      {"shift-down-blurred-gradient", box_blur(grad).roll({2}, {0}), grad},
      {"constant-same", full(77), full(77)},
      {"constant-different", full(77), full(200)},
      {"constant-vs-noise", full(128), base},
      {"inverted", 255 - base, base},
  };
}

// Every case at several sizes: 11x11 (the smallest, a 1x1 cropped map), odd and non-square ones.
TEST(OmniCompareSsim, MatchesNumpyReferenceOnSyntheticPairs) {
  TempDir dir;
  double worst = 0;
  int checked = 0;
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{11, 11}, {11, 13}, {24, 40}, {37, 23}}) {
    const std::vector<Case> cs = cases(h, w, static_cast<uint64_t>(h * 100 + w));
    std::vector<at::Tensor> as, bs;
    for (const Case& c : cs) as.push_back(c.a), bs.push_back(c.b);
    const std::string fa = dir / ("a" + std::to_string(h) + "x" + std::to_string(w) + ".safetensors");
    const std::string fb = dir / ("b" + std::to_string(h) + "x" + std::to_string(w) + ".safetensors");
    io::write_safetensors(fa, {{"frames", at::stack(as)}});
    io::write_safetensors(fb, {{"frames", at::stack(bs)}});
    const nlohmann::json ref = reference(fa, fb, 255.0);
    ASSERT_FALSE(ref.is_null());
    ASSERT_EQ(ref["frames"].size(), cs.size());
    for (size_t i = 0; i < cs.size(); ++i) {
      SCOPED_TRACE(cs[i].name + " " + std::to_string(h) + "x" + std::to_string(w));
      const double ours = compare::ssim(cs[i].a, cs[i].b, 255.0), theirs = ref["frames"][i];
      EXPECT_NEAR(ours, theirs, kBound);
      worst = std::max(worst, std::abs(ours - theirs));
      ++checked;
      // The same frames in [0, 1] (how omni-compare sees them) with data range 1: SSIM is scale-invariant.
      EXPECT_NEAR(compare::ssim(cs[i].a.to(at::kDouble) / 255, cs[i].b.to(at::kDouble) / 255, 1.0), theirs, kBound);
    }
    // Values that hold whatever the implementation: identical frames give exactly 1 (the map is x/x), constant
    // frames have no variance, so SSIM = (2ab + C1) / (a^2 + b^2 + C1).
    EXPECT_EQ(compare::ssim(cs[0].a, cs[0].b, 255.0), 1.0);
    EXPECT_EQ(compare::ssim(cs[5].a, cs[5].b, 255.0), 1.0);
    const double c1 = (0.01 * 255) * (0.01 * 255);
    EXPECT_NEAR(compare::ssim(cs[6].a, cs[6].b, 255.0), (2 * 77 * 200 + c1) / (77 * 77 + 200 * 200 + c1), kBound);
    EXPECT_LT(compare::ssim(cs[8].a, cs[8].b, 255.0), -0.9);  // inverted noise: strongly anti-correlated
  }
  std::printf("SSIM against the numpy reference: %d pairs, max abs difference %.3g\n", checked, worst);
}

// One channel (--luma gives [H, W, 1]), float values not on a uint8 grid, data range 1.
TEST(OmniCompareSsim, MatchesNumpyReferenceOnOneChannelFloats) {
  TempDir dir;
  at::Generator g = at::detail::createCPUGenerator(7);
  at::Tensor a = at::rand({3, 19, 29, 1}, g, at::kFloat);
  at::Tensor b = (a * 0.8 + 0.2 * at::rand({3, 19, 29, 1}, g, at::kFloat)).clamp(0, 1);
  io::write_safetensors(dir / "a.safetensors", {{"frames", a}});
  io::write_safetensors(dir / "b.safetensors", {{"frames", b}});
  const nlohmann::json ref = reference(dir / "a.safetensors", dir / "b.safetensors", 1.0);
  ASSERT_FALSE(ref.is_null());
  for (int64_t f = 0; f < 3; ++f) EXPECT_NEAR(compare::ssim(a[f], b[f], 1.0), double(ref["frames"][f]), kBound) << f;
}

TEST(OmniCompareSsim, SmallerThanTheWindowIsNaN) {
  EXPECT_TRUE(std::isnan(compare::ssim(at::zeros({10, 40, 3}), at::zeros({10, 40, 3}), 1.0)));
  EXPECT_TRUE(std::isnan(compare::ssim(at::zeros({40, 10, 3}), at::zeros({40, 10, 3}), 1.0)));
  EXPECT_EQ(compare::ssim(at::zeros({11, 11, 3}), at::zeros({11, 11, 3}), 1.0), 1.0);
}

// The number after `label` on the "SSIM: mean X, min Y over F frames" line.
double summary(const std::string& out, const std::string& label) {
  const size_t line = out.find("SSIM: mean ");
  if (line == std::string::npos) return NAN;
  const size_t at = out.find(label, line);
  return at == std::string::npos ? NAN : std::stod(out.substr(at + label.size()));
}

// End to end: a degraded video against the original; omni-compare's SSIM (per frame, mean, min) equals the
// reference's on the same decoded frames. The table prints 6 significant digits (rounding <= 5e-7), the summary 10.
TEST(OmniCompareSsim, VideoMatchesReference) {
  TempDir dir;
  const at::Tensor frames = gradient_clip(5, 32, 48);
  at::Generator g = at::detail::createCPUGenerator(3);
  io::write_video(dir / "a.mp4", frames, io::VideoWriteOptions{});
  // Noise strongest in the middle frame, so that the worst frame is neither the first nor the last.
  const at::Tensor scale = at::tensor({0.03, 0.05, 0.12, 0.05, 0.03}, at::kFloat).view({5, 1, 1, 1});
  io::write_video(dir / "noisy.mp4", (frames + scale * at::randn(frames.sizes(), g)).clamp(0, 1),
                  io::VideoWriteOptions{});
  io::write_safetensors(dir / "a.safetensors", {{"frames", io::read_video(dir / "a.mp4").frames}});
  io::write_safetensors(dir / "noisy.safetensors", {{"frames", io::read_video(dir / "noisy.mp4").frames}});
  const nlohmann::json ref = reference(dir / "noisy.safetensors", dir / "a.safetensors", 1.0);
  ASSERT_FALSE(ref.is_null());
  const double ref_min = ref["min"], ref_mean = ref["mean"];
  EXPECT_LT(ref_min, 0.99);                      // really degraded
  ASSERT_EQ(ref_min, double(ref["frames"][2]));  // the middle frame is the worst: a min that is not first or last
  ASSERT_GT(double(ref["frames"][4]), ref_min + 1e-3);

  std::string out;
  const std::string cmd = std::string(OMNI_COMPARE_BIN) + " " + dir / "noisy.mp4" + " " + dir / "a.mp4";
  EXPECT_EQ(run_command(cmd, &out), 1) << out;  // no tolerance: exact, and they differ
  const std::vector<double> per = ssim_column(out);
  ASSERT_EQ(per.size(), 5u) << out;
  for (size_t f = 0; f < per.size(); ++f) EXPECT_NEAR(per[f], double(ref["frames"][f]), 5e-7 + kBound) << f;
  EXPECT_NEAR(summary(out, "mean "), ref_mean, 5e-10 * ref_mean + kBound) << out;
  EXPECT_NEAR(summary(out, "min "), ref_min, 5e-10 * ref_min + kBound) << out;
  std::printf("%s\nreference: mean %.12f, min %.12f; printed mean and min differ by %.3g, %.3g\n", out.c_str(),
              ref_mean, ref_min, std::abs(summary(out, "mean ") - ref_mean), std::abs(summary(out, "min ") - ref_min));

  // --ssim-min passes just below the worst frame and fails just above it.
  std::ostringstream below, above;
  below << std::setprecision(12) << " --ssim-min " << ref_min - 1e-6;
  above << std::setprecision(12) << " --ssim-min " << ref_min + 1e-6;
  EXPECT_EQ(run_command(cmd + below.str(), &out), 0) << out;
  EXPECT_NE(out.find("PASS: min SSIM"), std::string::npos) << out;
  EXPECT_EQ(run_command(cmd + above.str(), &out), 1) << out;
  EXPECT_NE(out.find("FAIL: min SSIM"), std::string::npos) << out;
}

}  // namespace
}  // namespace omni::media_test
