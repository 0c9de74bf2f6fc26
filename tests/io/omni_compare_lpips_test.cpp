// omni-compare's LPIPS (apps/omni-compare/lpips.h) against the PyPI lpips package (0.1.4) itself:
// tools/reference/lpips_reference.py builds lpips.LPIPS(net='alex', version='0.1') with a random AlexNet trunk
// (torch.manual_seed; nothing to download) and the package's v0.1 linear layers, writes its weights with
// tools/lpips/convert_weights.py and deterministic uint8 frame pairs, and prints the package's distances. Runs the
// reference environment's python (tools/reference/setup.sh); without it the test fails.
//
// The bound, 1e-4 absolute: both sides compute in float32 from the same float32 inputs (uint8 / 255 by the same
// ATen division) with the same operations in the same order; they can differ only where a kernel (the
// convolutions, the channel sums, the spatial means) sums in another order, e.g. another convolution algorithm for
// another batch size or thread count. A float32 sum of n terms is then off by ~sqrt(n) eps relative at most in
// practice (n <= 3456 for conv3's 384 x 3 x 3: ~60 x 6e-8 ~ 4e-6), and the five layers compound that to ~1e-5
// relative; the features are normalised to unit length and the distances are below 1, so ~1e-5 absolute at
// worst, and 1e-4 leaves a margin of 10 over that estimate.
// Measured: 0 on every pair at 1, 2 and 4 threads (bit-identical: this LibTorch is the package's torch 2.11, with the
// same kernels). Multiplying by 1 / scale instead of dividing by scale, a change of rounding only, measured 3e-8.
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "io/safetensors.h"
#include "lpips.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

constexpr double kBound = 1e-4;

// One run of the reference script for the whole suite (it takes seconds): its folder and its JSON.
class OmniCompareLpips : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("omni_lpips");
    std::ostringstream cmd;
    cmd << "'" << OMNI_REFERENCE_PYTHON << "' '" << OMNI_LPIPS_REFERENCE << "' '" << dir_->path() << "' --seed 0";
    std::string out;
    const int rc = run_command(cmd.str(), &out, /*merge=*/false);
    if (rc != 0) {
      error_ = cmd.str() + "\nexit " + std::to_string(rc) + ": " + out +
               "\n(the reference environment: tools/reference/setup.sh)";
      return;
    }
    ref_ = new nlohmann::json(nlohmann::json::parse(out));
  }
  static void TearDownTestSuite() {
    delete ref_;
    delete dir_;
    ref_ = nullptr, dir_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(ref_, nullptr) << error_; }

  static std::string weights() { return (*ref_)["weights"]; }
  // Group k's frames as float32 in [0, 1], [N, H, W, 3], divided as the script divides them.
  static std::pair<at::Tensor, at::Tensor> frames(const std::string& key) {
    io::SafetensorsFile f((*ref_)["frames"].get<std::string>());
    return {f.read("a_" + key).to(at::kFloat) / 255, f.read("b_" + key).to(at::kFloat) / 255};
  }

  static TempDir* dir_;
  static nlohmann::json* ref_;
  static std::string error_;
};
TempDir* OmniCompareLpips::dir_ = nullptr;
nlohmann::json* OmniCompareLpips::ref_ = nullptr;
std::string OmniCompareLpips::error_;

// Every pair of every size (64x64, 67x45, 31x33: the smallest side AlexNet takes, 256x144), six pairs each, so
// that distances() goes through a batch of four and a batch of two.
TEST_F(OmniCompareLpips, MatchesPackage) {
  const compare::Lpips lpips(weights());
  double worst = 0;
  int checked = 0;
  for (const nlohmann::json& g : (*ref_)["groups"]) {
    const auto [a, b] = frames(g["key"]);
    const std::vector<double> ours = lpips.distances(a, b);
    ASSERT_EQ(ours.size(), g["distances"].size());
    for (size_t i = 0; i < ours.size(); ++i) {
      const std::string label = g["labels"][i];
      SCOPED_TRACE(label + " " + std::to_string(int(g["size"][0])) + "x" + std::to_string(int(g["size"][1])));
      const double theirs = g["distances"][i];
      EXPECT_NEAR(ours[i], theirs, kBound);
      worst = std::max(worst, std::abs(ours[i] - theirs));
      ++checked;
      // Identical frames: identical features, so exactly 0 whatever the kernels.
      if (label == "identical") EXPECT_EQ(ours[i], 0.0);
      // Distinct frames are really apart (the comparison above is not between zeros).
      if (label == "noise-vs-noise" || label == "inverted") EXPECT_GT(ours[i], 0.05);
    }
    // One pair on its own (batch of 1), and the same frames in float64: the same distances within the bound.
    EXPECT_NEAR(lpips.distance(a[2], b[2]), double(g["distances"][2]), kBound);
    const std::vector<double> from_double = lpips.distances(a.to(at::kDouble), b.to(at::kDouble));
    for (size_t i = 0; i < from_double.size(); ++i) EXPECT_NEAR(from_double[i], ours[i], kBound) << i;
  }
  std::printf("LPIPS against the lpips package: %d pairs, max abs difference %.3g\n", checked, worst);
}

// The file's ScalingLayer holds the package's constants (torch.Tensor([-.030, -.088, -.188]), [.458, .448, .450]:
// float32 of those decimals), and the other tensors are the package's names, float32.
TEST_F(OmniCompareLpips, WeightsFileIsThePackages) {
  io::SafetensorsFile f(weights());
  const at::Tensor shift = f.read("scaling_layer.shift"), scale = f.read("scaling_layer.scale");
  ASSERT_EQ(shift.sizes(), at::IntArrayRef({1, 3, 1, 1}));
  const double want_shift[3] = {-.030, -.088, -.188}, want_scale[3] = {.458, .448, .450};
  for (int c = 0; c < 3; ++c) {
    EXPECT_EQ(shift.view({3})[c].item<float>(), static_cast<float>(want_shift[c])) << c;
    EXPECT_EQ(scale.view({3})[c].item<float>(), static_cast<float>(want_scale[c])) << c;
  }
  EXPECT_EQ(f.names().size(), 2u + 10u + 5u);  // scaling layer, 5 convs x (weight, bias), 5 linear layers
  for (const std::string& n : f.names()) EXPECT_EQ(f.info(n).dtype, io::DType::F32) << n;
  EXPECT_EQ(f.info("net.slice3.6.weight").shape, (std::vector<int64_t>{384, 192, 3, 3}));
  EXPECT_EQ(f.info("lin4.model.1.weight").shape, (std::vector<int64_t>{1, 256, 1, 1}));
}

// Several threads on one instance at once: the same distances as one thread alone.
TEST_F(OmniCompareLpips, ThreadsShareOneInstance) {
  const compare::Lpips lpips(weights());
  const auto [a, b] = frames("0");
  const std::vector<double> serial = lpips.distances(a, b);
  std::vector<std::vector<double>> got(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < got.size(); ++t) threads.emplace_back([&, t] { got[t] = lpips.distances(a, b); });
  for (std::thread& t : threads) t.join();
  for (size_t t = 0; t < got.size(); ++t) {
    ASSERT_EQ(got[t].size(), serial.size());
    for (size_t i = 0; i < serial.size(); ++i) EXPECT_NEAR(got[t][i], serial[i], 1e-6) << t << " " << i;
  }
}

// A weights file with a tensor missing, one too many (the package's `lins.N.*` duplicate) or a wrong shape is an
// input error naming the tensor and the file.
TEST_F(OmniCompareLpips, RefusesWrongWeightsFiles) {
  io::SafetensorsFile good(weights());
  std::vector<std::pair<std::string, at::Tensor>> all;
  for (const std::string& n : good.names()) all.push_back({n, good.read(n)});
  auto write = [&](const std::string& name, const std::vector<std::pair<std::string, at::Tensor>>& ts) {
    const std::string path = *dir_ / name;
    io::write_safetensors(path, ts);
    return path;
  };
  const std::string ok = write("copy.safetensors", all);
  EXPECT_NO_THROW(compare::Lpips{ok});

  std::vector<std::pair<std::string, at::Tensor>> missing;
  for (const auto& t : all)
    if (t.first != "lin3.model.1.weight") missing.push_back(t);
  const std::string fm = write("missing.safetensors", missing);
  expect_error([&] { compare::Lpips{fm}; }, ExitCode::kInput, {fm, "missing", "'lin3.model.1.weight'"});

  std::vector<std::pair<std::string, at::Tensor>> extra = all;
  extra.push_back({"lins.0.model.1.weight", good.read("lin0.model.1.weight")});
  const std::string fe = write("extra.safetensors", extra);
  expect_error([&] { compare::Lpips{fe}; }, ExitCode::kInput, {fe, "unexpected", "'lins.0.model.1.weight'"});

  std::vector<std::pair<std::string, at::Tensor>> wrong = all;
  for (auto& t : wrong)
    if (t.first == "net.slice2.3.bias") t.second = at::zeros({191});
  const std::string fw = write("wrong.safetensors", wrong);
  expect_error([&] { compare::Lpips{fw}; }, ExitCode::kInput, {fw, "'net.slice2.3.bias' is [191], expected [192]"});

  expect_error([&] { compare::Lpips{*dir_ / "absent.safetensors"}; }, ExitCode::kInput, {"absent.safetensors"});
}

// Below 31 pixels on a side AlexNet's second pool has no input: an input error, not ATen's.
TEST_F(OmniCompareLpips, TooSmallFramesAreRefused) {
  const compare::Lpips lpips(weights());
  expect_error(
      [&] {
        lpips.distance(at::zeros({30, 64, 3}), at::zeros({30, 64, 3}));
      },
      ExitCode::kInput, {"64x30", "at least 31x31"});
  expect_error(
      [&] {
        lpips.distance(at::zeros({64, 30, 3}), at::zeros({64, 30, 3}));
      },
      ExitCode::kInput, {"30x64", "at least 31x31"});
  EXPECT_EQ(lpips.distance(at::zeros({31, 31, 3}), at::zeros({31, 31, 3})), 0.0);
}

// Not run by default (slow): the time of distances() on 16 frame pairs at video sizes, at LibTorch's default
// thread count. ./omni_compare_lpips_test --gtest_also_run_disabled_tests --gtest_filter='*Timing*'
TEST_F(OmniCompareLpips, DISABLED_Timing) {
  const compare::Lpips lpips(weights());
  for (auto [h, w] : std::vector<std::pair<int64_t, int64_t>>{{720, 1280}, {480, 832}}) {
    at::Generator g = at::detail::createCPUGenerator(1);
    const at::Tensor a = at::rand({16, h, w, 3}, g), b = at::rand({16, h, w, 3}, g);
    rusage before{}, after{};
    ::getrusage(RUSAGE_SELF, &before);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<double> d = lpips.distances(a, b);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ::getrusage(RUSAGE_SELF, &after);
    std::printf(
        "LPIPS: 16 pairs of %lldx%lld in %.2f s (%.3f s per pair, %d threads); first %.4f; peak RSS %.0f MB "
        "(+%.0f MB)\n",
        static_cast<long long>(w), static_cast<long long>(h), s, s / 16, at::get_num_threads(), d[0],
        after.ru_maxrss / 1024.0, (after.ru_maxrss - before.ru_maxrss) / 1024.0);
  }
}

}  // namespace
}  // namespace omni::media_test
