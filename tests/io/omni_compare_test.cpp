// omni-compare end to end: equal outputs exit 0, perturbed ones exit 1, bad usage 2, bad files 3.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <vector>

#include "io/safetensors.h"
#include "io/video_writer.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

int compare(const std::string& args, std::string* out) {
  return run_command(std::string(OMNI_COMPARE_BIN) + " " + args, out);
}

TEST(OmniCompare, Videos) {
  TempDir dir;
  at::Tensor frames = gradient_clip(9, 32, 48);
  io::write_video(dir / "a.mp4", frames, io::VideoWriteOptions{});
  ASSERT_EQ(std::system(("cp '" + dir / "a.mp4" + "' '" + dir / "copy.mp4" + "'").c_str()), 0);
  // Brighter by 0.1 everywhere: about 20 dB against the original.
  io::write_video(dir / "bright.mp4", (frames + 0.1).clamp(0, 1), io::VideoWriteOptions{});
  io::write_video(dir / "short.mp4", frames.slice(0, 0, 5), io::VideoWriteOptions{});
  io::write_safetensors(dir / "frames.safetensors", {{"frames", frames.unsqueeze(0)}});
  std::string out;

  EXPECT_EQ(compare(dir / "copy.mp4 " + dir / "a.mp4", &out), 0) << out;  // no tolerance: must be equal
  EXPECT_NE(out.find("PASS"), std::string::npos) << out;
  EXPECT_NE(out.find("inf"), std::string::npos) << out;
  // Identical frames: SSIM exactly 1 in every frame (the table's third column), mean and min.
  EXPECT_NE(out.find("SSIM: mean 1, min 1 over 9 frames"), std::string::npos) << out;
  EXPECT_EQ(ssim_column(out), std::vector<double>(9, 1.0)) << out;
  EXPECT_EQ(compare(dir / "bright.mp4 " + dir / "a.mp4 --psnr-min 30 --tolerance 0.5", &out), 1) << out;
  EXPECT_NE(out.find("FAIL: max abs"), std::string::npos) << out;
  EXPECT_NE(out.find("< 30 dB"), std::string::npos) << out;
  // Brighter: every frame's SSIM below 1 (tests/io/omni_compare_ssim_test.cpp holds the values to the reference);
  // --ssim-min alone is the criterion (no exactness), pass or fail.
  const std::vector<double> bright = ssim_column(out);
  ASSERT_EQ(bright.size(), 9u) << out;
  const double worst = *std::min_element(bright.begin(), bright.end());
  EXPECT_GT(worst, 0.5) << out;
  EXPECT_LT(*std::max_element(bright.begin(), bright.end()), 0.999) << out;
  EXPECT_NE(out.find("SSIM: mean "), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "bright.mp4 " + dir / "a.mp4 --ssim-min " + std::to_string(worst - 1e-3), &out), 0) << out;
  EXPECT_NE(out.find("PASS: min SSIM"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "bright.mp4 " + dir / "a.mp4 --ssim-min 0.9999", &out), 1) << out;
  EXPECT_NE(out.find("FAIL: min SSIM"), std::string::npos) << out;
  EXPECT_NE(out.find(" < 0.9999"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "short.mp4 " + dir / "a.mp4 --psnr-min 1", &out), 1) << out;
  EXPECT_NE(out.find("frame count differs: A 5, B 9"), std::string::npos) << out;
  // A video against saved frames [1, F, H, W, 3]: the encode loses less than 35 dB.
  EXPECT_EQ(compare(dir / "a.mp4 " + dir / "frames.safetensors --psnr-min 35", &out), 0) << out;
}

// The sound tracks of speech-to-video MP4s: ignored unless --audio (equal samples) or --audio-snr-min.
TEST(OmniCompare, SoundTracksOnlyWhenAsked) {
  TempDir dir;
  const at::Tensor frames = gradient_clip(16, 32, 48);  // 1 s at 16 fps
  auto tone = [](double hz) {
    io::AudioTrack t;
    t.sample_rate = 16000;
    t.channels = 1;
    for (int i = 0; i < 16000; ++i) t.samples.push_back(static_cast<float>(0.3 * std::sin(2 * M_PI * hz * i / 16000)));
    return t;
  };
  const io::AudioTrack low = tone(220), high = tone(880);
  io::VideoWriteOptions options;
  options.audio = &low;
  io::write_video(dir / "low.mp4", frames, options);
  io::write_video(dir / "low2.mp4", frames, options);  // the same frames and sound: the same samples decoded
  options.audio = &high;
  io::write_video(dir / "high.mp4", frames, options);
  io::write_video(dir / "silent.mp4", frames, io::VideoWriteOptions{});
  std::string out;
  EXPECT_EQ(compare(dir / "high.mp4 " + dir / "low.mp4", &out), 0) << "the picture alone: " << out;
  EXPECT_EQ(out.find("audio"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "high.mp4 " + dir / "low.mp4 --audio", &out), 1) << out;
  EXPECT_NE(out.find("FAIL: audio not equal"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "low2.mp4 " + dir / "low.mp4 --audio", &out), 0) << out;
  EXPECT_NE(out.find("PASS: audio equal"), std::string::npos) << out;
  // AAC ends on a whole frame of 1024 samples: 1.024 s of sound for 1 s of picture (within a frame).
  EXPECT_NE(out.find("audio: A 16000 Hz, 1 ch, 1.024 s"), std::string::npos) << out;
  // Two unrelated tones: an SNR near -3 dB (the difference carries both); a bound below it passes, above fails.
  EXPECT_EQ(compare(dir / "high.mp4 " + dir / "low.mp4 --audio-snr-min -6", &out), 0) << out;
  EXPECT_EQ(compare(dir / "high.mp4 " + dir / "low.mp4 --audio-snr-min 20", &out), 1) << out;
  EXPECT_NE(out.find("< 20"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "silent.mp4 " + dir / "low.mp4 --audio", &out), 1) << out;
  EXPECT_NE(out.find("has no audio stream"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "silent.mp4 " + dir / "low.mp4", &out), 0) << "no track, not asked: " << out;
}

// Frames smaller than SSIM's 11x11 window: no SSIM (n/a), which --ssim-min refuses; PSNR as before.
TEST(OmniCompare, SsimNeedsElevenPixels) {
  TempDir dir;
  at::Tensor frames = gradient_clip(2, 8, 16);
  io::write_video(dir / "a.mp4", frames, io::VideoWriteOptions{});
  std::string out;
  EXPECT_EQ(compare(dir / "a.mp4 " + dir / "a.mp4", &out), 0) << out;
  EXPECT_NE(out.find("SSIM: n/a (frames under 11x11)"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "a.mp4 " + dir / "a.mp4 --ssim-min 0", &out), 1) << out;
  EXPECT_NE(out.find("FAIL: min SSIM n/a < 0"), std::string::npos) << out;
}

TEST(OmniCompare, TensorFiles) {
  TempDir dir;
  at::Tensor x = at::linspace(-1, 1, 60).view({3, 4, 5});
  at::Tensor y = at::arange(12, at::kLong).view({3, 4});
  io::write_safetensors(dir / "a.safetensors", {{"x", x}, {"ids", y}});
  io::write_safetensors(dir / "same.safetensors", {{"ids", y.clone()}, {"x", x.clone()}});
  at::Tensor xp = x.clone();
  xp[1][2][3] += 1e-3;
  io::write_safetensors(dir / "perturbed.safetensors", {{"x", xp}, {"ids", y}});
  io::write_safetensors(dir / "extra.safetensors", {{"x", x.view({60})}, {"ids", y}, {"z", at::zeros({2})}});
  std::string out;

  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "same.safetensors", &out), 0) << out;
  EXPECT_NE(out.find("PASS: 2 tensors compared"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "perturbed.safetensors " + dir / "a.safetensors --tolerance 1e-4", &out), 1) << out;
  EXPECT_NE(out.find("0.001"), std::string::npos) << out;  // the max abs error is printed
  EXPECT_EQ(compare(dir / "perturbed.safetensors " + dir / "a.safetensors --tolerance 2e-3", &out), 0) << out;
  // A key on one side only fails and is listed; a shape mismatch fails.
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "extra.safetensors", &out), 1) << out;
  EXPECT_NE(out.find("missing in A: z"), std::string::npos) << out;
  EXPECT_NE(out.find("FAIL (shape)"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "extra.safetensors --keys ids --allow-missing", &out), 0) << out;
}

TEST(OmniCompare, UsageAndFileErrors) {
  TempDir dir;
  io::write_safetensors(dir / "a.safetensors", {{"x", at::ones({2})}});
  std::string out;
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "a.safetensors --tolerance abc", &out), 2) << out;
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "a.safetensors --psnr-min 30", &out), 2) << out;
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "a.safetensors --ssim-min 0.9", &out), 2) << out;
  EXPECT_EQ(compare(dir / "a.safetensors " + dir / "a.safetensors --ssim-min 1.5", &out), 2) << out;
  EXPECT_NE(out.find("--ssim-min must be a number in [-1, 1]"), std::string::npos) << out;
  EXPECT_EQ(compare(dir / "nothere.mp4 " + dir / "a.safetensors", &out), 3) << out;
  EXPECT_NE(out.find("nothere.mp4"), std::string::npos) << out;
}

}  // namespace
}  // namespace omni::media_test
