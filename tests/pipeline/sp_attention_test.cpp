// One-process checks of the sequence-parallel building blocks: token chunking, the blockwise attention and
// its log-sum-exp merge against one plain softmax in float64, the ring kernel's choice (the mapping from SDPA's
// backend, the log-sum-exp shapes, one log line per key), and the heads % ulysses usage error.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "pipeline/sequence_parallel.h"
#include "tensor_check.h"

namespace {

using omni::pipeline::block_attention;
using omni::pipeline::block_attention_math;
using omni::pipeline::merge_attention;
using omni::pipeline::PartialAttention;
using omni::pipeline::RingKernel;

using omni::test_util::max_abs_err;

// softmax(q k^T * scale) v and logsumexp of the scores, all in float64.
PartialAttention reference(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, double scale) {
  auto s = at::matmul(q.to(at::kDouble), k.to(at::kDouble).transpose(-2, -1)) * scale;  // [B, H, Sq, Sk]
  return {at::matmul(at::softmax(s, -1), v.to(at::kDouble)), at::logsumexp(s, -1)};
}

TEST(TokenChunks, EvenAsPossibleAndContiguous) {
  EXPECT_EQ(omni::pipeline::token_chunks(8, 4), (std::vector<int64_t>{2, 2, 2, 2}));
  EXPECT_EQ(omni::pipeline::token_chunks(9, 4), (std::vector<int64_t>{3, 2, 2, 2}));
  EXPECT_EQ(omni::pipeline::token_chunks(7, 2), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(omni::pipeline::token_chunks(5, 1), (std::vector<int64_t>{5}));
  EXPECT_EQ(omni::pipeline::token_chunks(2, 3), (std::vector<int64_t>{1, 1, 0}));
}

TEST(BlockAttention, OneBlockMatchesSoftmax) {
  at::manual_seed(11);
  auto q = at::randn({2, 3, 5, 8}), k = at::randn({2, 3, 7, 8}), v = at::randn({2, 3, 7, 8});
  const double scale = 1.0 / std::sqrt(8.0);
  auto got = block_attention(q, k, v, scale);
  auto ref = reference(q, k, v, scale);
  ASSERT_EQ(got.out.scalar_type(), at::kFloat);
  const double e_out = max_abs_err(got.out, ref.out), e_lse = max_abs_err(got.lse, ref.lse);
  std::printf("one block: out max_abs_err=%g lse max_abs_err=%g\n", e_out, e_lse);
  EXPECT_LT(e_out, 1e-6);
  EXPECT_LT(e_lse, 1e-5);
}

// The fused kernel (what ring attention runs) and the explicit float32 composition, at a size where the
// flash kernel tiles both the queries and the keys (its CPU tiles are 32..256 rows), against float64.
TEST(BlockAttention, FusedKernelMatchesFloat64Softmax) {
  at::manual_seed(16);
  auto q = at::randn({1, 3, 300, 16}), k = at::randn({1, 3, 520, 16}), v = at::randn({1, 3, 520, 16});
  const double scale = 1.0 / std::sqrt(16.0);
  auto fused = block_attention(q, k, v, scale);
  auto math = block_attention_math(q, k, v, scale);
  auto ref = reference(q, k, v, scale);
  ASSERT_EQ(fused.out.scalar_type(), at::kFloat);
  ASSERT_EQ(fused.lse.sizes(), (std::vector<int64_t>{1, 3, 300}));
  const double e_out = max_abs_err(fused.out, ref.out), e_lse = max_abs_err(fused.lse, ref.lse);
  std::printf("fused: out max_abs_err=%g lse max_abs_err=%g (math: %g, %g)\n", e_out, e_lse,
              max_abs_err(math.out, ref.out), max_abs_err(math.lse, ref.lse));
  // float32 sums of 520 terms of size ~1: a few hundred float32 ulps at most.
  EXPECT_LT(e_out, 1e-5);
  EXPECT_LT(e_lse, 1e-5);
}

TEST(BlockAttention, QueryChunksMatchOneChunk) {
  at::manual_seed(12);
  auto q = at::randn({1, 2, 11, 4}), k = at::randn({1, 2, 6, 4}), v = at::randn({1, 2, 6, 4});
  auto whole = block_attention_math(q, k, v, 0.5);
  // 2 heads x 6 keys = 12 score elements per query row: a budget of 40 gives chunks of 3 rows (3, 3, 3, 2).
  auto chunked = block_attention_math(q, k, v, 0.5, /*max_score_elements=*/40);
  const double e = std::max(max_abs_err(whole.out, chunked.out), max_abs_err(whole.lse, chunked.lse));
  std::printf("query chunks vs one chunk: max_abs_err=%g\n", e);
  EXPECT_LT(e, 1e-6);
}

// Keys split into uneven blocks (one of a single token), merged in two orders, against one softmax over all
// keys in float64. Large scores (x 8, exp(score) beyond float32's range) check that the merge never
// exponentiates a raw score.
TEST(MergeAttention, BlocksMatchSoftmaxOverUnion) {
  at::manual_seed(13);
  for (double amplitude : {1.0, 8.0}) {
    auto q = at::randn({2, 2, 6, 12}) * amplitude, k = at::randn({2, 2, 10, 12}) * amplitude;
    auto v = at::randn({2, 2, 10, 12});
    const double scale = 1.0 / std::sqrt(12.0);
    auto ref = reference(q, k, v, scale);
    // Large scores carry float32 rounding of their own (|score| ~ 200 at amplitude 8): the merge may add
    // rounding of the same order, no more, to what one float32 softmax over all keys gets.
    auto whole = block_attention(q, k, v, scale);
    const double e_whole = max_abs_err(whole.out, ref.out), e_whole_lse = max_abs_err(whole.lse, ref.lse);
    const double tol_out = std::max(1e-6, 3 * e_whole), tol_lse = std::max(1e-6, 3 * e_whole_lse);
    const std::vector<std::pair<int64_t, int64_t>> blocks = {{0, 4}, {4, 5}, {5, 10}};
    for (bool reversed : {false, true}) {
      PartialAttention acc;
      for (size_t i = 0; i < blocks.size(); ++i) {
        const auto [b0, b1] = blocks[reversed ? blocks.size() - 1 - i : i];
        auto part = block_attention(q, k.slice(2, b0, b1), v.slice(2, b0, b1), scale);
        if (i == 0) {
          acc = part;
        } else {
          merge_attention(acc, part);
        }
      }
      const double e_out = max_abs_err(acc.out, ref.out), e_lse = max_abs_err(acc.lse, ref.lse);
      std::printf(
          "merge of 3 blocks (amplitude %g, %s): out max_abs_err=%g (one float32 softmax: %g), lse "
          "max_abs_err=%g (one float32 softmax: %g)\n",
          amplitude, reversed ? "reversed" : "in order", e_out, e_whole, e_lse, e_whole_lse);
      EXPECT_TRUE(std::isfinite(e_out) && std::isfinite(e_lse));
      EXPECT_LE(e_out, tol_out);
      EXPECT_LE(e_lse, tol_lse);
      if (amplitude == 1.0) EXPECT_LT(e_out, 1e-6);
    }
  }
}

TEST(MergeAttention, Bfloat16InputsAccumulateInFloat32) {
  at::manual_seed(14);
  auto q = at::randn({1, 2, 4, 8}).to(at::kBFloat16), k = at::randn({1, 2, 6, 8}).to(at::kBFloat16);
  auto v = at::randn({1, 2, 6, 8}).to(at::kBFloat16);
  auto acc = block_attention(q, k.slice(2, 0, 3), v.slice(2, 0, 3), 0.35);
  merge_attention(acc, block_attention(q, k.slice(2, 3, 6), v.slice(2, 3, 6), 0.35));
  EXPECT_EQ(acc.out.scalar_type(), at::kFloat);
  // The same bfloat16 values; each block's output is the bfloat16 kernel's, rounded once to bfloat16
  // (relative 2^-9), and the merge weights sum to 1: the merged result is within 2^-9 max|v| (+ float32
  // rounding) of the float64 softmax. A bfloat16 merge would add its own roundings on top.
  const double e = max_abs_err(acc.out, reference(q, k, v, 0.35).out);
  const double bound = std::ldexp(v.to(at::kFloat).abs().max().item<double>(), -9) + 1e-6;
  std::printf("bf16 inputs, float32 merge: max_abs_err=%g (bound %g)\n", e, bound);
  EXPECT_LE(e, bound);
}

// at::SDPBackend's values, as at::_fused_sdp_choice returns them.
constexpr int64_t kSdpError = -1, kSdpMath = 0, kSdpFlash = 1, kSdpEfficient = 2, kSdpCudnn = 3, kSdpOverride = 4;

TEST(RingKernelFor, MapsSdpChoiceToKernel) {
  using omni::pipeline::ring_kernel_for;
  const auto cuda = c10::DeviceType::CUDA, cpu = c10::DeviceType::CPU;
  // SDPA's fused choices where they apply.
  EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, kSdpCudnn, 128), RingKernel::kCudnn);
  EXPECT_EQ(ring_kernel_for(cuda, at::kHalf, kSdpCudnn, 64), RingKernel::kCudnn);
  EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, kSdpFlash, 128), RingKernel::kFlash);
  EXPECT_EQ(ring_kernel_for(cuda, at::kHalf, kSdpFlash, 256), RingKernel::kFlash);
  EXPECT_EQ(ring_kernel_for(cuda, at::kFloat, kSdpEfficient, 128), RingKernel::kEfficient);
  EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, kSdpEfficient, 128), RingKernel::kEfficient);
  // The CPU has its own fused kernel whatever SDPA would say.
  for (int64_t choice : {kSdpError, kSdpMath, kSdpFlash, kSdpCudnn})
    EXPECT_EQ(ring_kernel_for(cpu, at::kFloat, choice, 12), RingKernel::kCpuFlash) << choice;
  EXPECT_EQ(ring_kernel_for(cpu, at::kBFloat16, kSdpError, 128), RingKernel::kCpuFlash);
  // math, error, overrideable and unknown choices: the explicit composition.
  for (int64_t choice : {kSdpMath, kSdpError, kSdpOverride, int64_t{7}, int64_t{-5}})
    EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, choice, 128), RingKernel::kMath) << choice;
  // A fused choice that cannot serve the dtype or head dim: the kernel that can, else math.
  EXPECT_EQ(ring_kernel_for(cuda, at::kFloat, kSdpCudnn, 128), RingKernel::kEfficient);
  EXPECT_EQ(ring_kernel_for(cuda, at::kFloat, kSdpFlash, 128), RingKernel::kEfficient);
  EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, kSdpCudnn, 260), RingKernel::kMath);
  EXPECT_EQ(ring_kernel_for(cuda, at::kBFloat16, kSdpFlash, 12), RingKernel::kMath);
  EXPECT_EQ(ring_kernel_for(cuda, at::kDouble, kSdpEfficient, 64), RingKernel::kMath);
  // No fused kernel with the log-sum-exp elsewhere.
  EXPECT_EQ(ring_kernel_for(c10::DeviceType::Meta, at::kBFloat16, kSdpCudnn, 128), RingKernel::kMath);
}

TEST(RingKernelFor, Names) {
  using omni::pipeline::ring_kernel_name;
  EXPECT_STREQ(ring_kernel_name(RingKernel::kCpuFlash), "cpu-flash");
  EXPECT_STREQ(ring_kernel_name(RingKernel::kCudnn), "cudnn");
  EXPECT_STREQ(ring_kernel_name(RingKernel::kFlash), "flash");
  EXPECT_STREQ(ring_kernel_name(RingKernel::kEfficient), "efficient");
  EXPECT_STREQ(ring_kernel_name(RingKernel::kMath), "math");
}

TEST(NormalizeLse, AcceptsKernelShapes) {
  using omni::pipeline::normalize_lse;
  // Distinct values, so that a wrong row or a lost row shows.
  auto rows = at::arange(2 * 3 * 5, at::kFloat).view({2, 3, 5});  // [B, H, Sq]
  // flash: already [B, H, Sq].
  auto flash = normalize_lse(rows, 5);
  EXPECT_EQ(flash.sizes(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_TRUE(at::equal(flash, rows));
  // cuDNN: [B, H, Sq, 1], here in bfloat16-representable values given as bfloat16.
  auto cudnn = normalize_lse(rows.unsqueeze(-1).to(at::kBFloat16), 5);
  EXPECT_EQ(cudnn.sizes(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(cudnn.scalar_type(), at::kFloat);
  EXPECT_TRUE(at::equal(cudnn, rows));
  // memory-efficient: rows padded to a tile, [B, H, >= Sq]; the padding is garbage.
  auto padded = at::full({2, 3, 32}, std::nanf(""), at::kFloat);  // [B, H, 32]
  padded.narrow(2, 0, 5).copy_(rows);
  auto efficient = normalize_lse(padded, 5);
  EXPECT_EQ(efficient.sizes(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_TRUE(at::equal(efficient, rows));
  // padded with the trailing 1 as well.
  EXPECT_TRUE(at::equal(normalize_lse(padded.unsqueeze(-1), 5), rows));
  // Too few rows, a trailing dim other than 1, the wrong rank: errors.
  EXPECT_THROW(normalize_lse(rows, 6), omni::Error);
  EXPECT_THROW(normalize_lse(at::zeros({2, 3, 5, 2}), 5), omni::Error);
  EXPECT_THROW(normalize_lse(at::zeros({2, 5}), 5), omni::Error);
}

// The kernel is chosen once per (device, dtype, head dim) and named in one info line with its reason. Head
// dims no other test uses, so that this process has not chosen for them before.
TEST(ChooseRingKernel, ChosenAndLoggedOncePerKey) {
  omni::log::set_level(omni::log::Level::kInfo);
  auto make = [](int64_t d) { return at::randn({1, 2, 3, d}); };
  auto a = make(20), b = make(20), c = make(28);
  testing::internal::CaptureStderr();
  const auto k1 = omni::pipeline::choose_ring_kernel(a, a, a, 0.5);
  const auto k2 = omni::pipeline::choose_ring_kernel(b, b, b, 0.5);
  const auto k3 = omni::pipeline::choose_ring_kernel(c, c, c, 0.5);
  block_attention(a, b, b, 0.5);  // through the same choice: no new line
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(k1, RingKernel::kCpuFlash);
  EXPECT_EQ(k2, RingKernel::kCpuFlash);
  EXPECT_EQ(k3, RingKernel::kCpuFlash);
  auto count = [&](const std::string& needle) {
    int n = 0;
    for (size_t at = err.find(needle); at != std::string::npos; at = err.find(needle, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("ring attention kernel: cpu-flash for cpu float32, head dim 20 ("), 1) << err;
  EXPECT_EQ(count("ring attention kernel: cpu-flash for cpu float32, head dim 28 ("), 1) << err;
  EXPECT_EQ(count("ring attention kernel:"), 2) << err;
}

// Every kernel this machine runs, on q/k/v as Ulysses hands them over: strided views of a token-major
// [S, 3, B, H, d] buffer.
TEST(BlockAttention, KernelsOnTokenMajorViews) {
  at::manual_seed(17);
  const int64_t s = 40, b = 2, h = 3, d = 16;
  auto buf = at::randn({s, 3, b, h, d});                                      // [S, 3, B, H, d]
  auto view = [&](int i) { return buf.select(1, i).permute({1, 2, 0, 3}); };  // [B, H, S, d]
  auto q = view(0), k = view(1), v = view(2);
  ASSERT_FALSE(q.is_contiguous());
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  auto ref = reference(q, k, v, scale);
  for (auto kernel : {RingKernel::kCpuFlash, RingKernel::kMath}) {
    auto got = block_attention(q, k, v, scale, kernel);
    const double e_out = max_abs_err(got.out, ref.out), e_lse = max_abs_err(got.lse, ref.lse);
    std::printf("%s on token-major views: out max_abs_err=%g lse max_abs_err=%g\n",
                omni::pipeline::ring_kernel_name(kernel), e_out, e_lse);
    ASSERT_EQ(got.lse.sizes(), (std::vector<int64_t>{b, h, s}));
    EXPECT_LT(e_out, 1e-5);
    EXPECT_LT(e_lse, 1e-5);
  }
}

TEST(UlyssesHeads, DegreeMustDivideHeads) {
  EXPECT_NO_THROW(omni::pipeline::check_ulysses_heads(40, 1));
  EXPECT_NO_THROW(omni::pipeline::check_ulysses_heads(40, 8));
  EXPECT_NO_THROW(omni::pipeline::check_ulysses_heads(24, 4));
  try {
    omni::pipeline::check_ulysses_heads(40, 3);
    FAIL() << "ulysses 3 with 40 heads was accepted";
  } catch (const omni::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(msg.find("--ulysses-degree 3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("40 attention heads"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1, 2, 4, 5, 8, 10, 20, 40"), std::string::npos) << msg;
  }
}

// Without groups (degree 1) both backends are the local attention.
TEST(Backends, DegreeOneIsLocalAttention) {
  at::manual_seed(15);
  auto q = at::randn({1, 4, 5, 8}), k = at::randn({1, 4, 5, 8}), v = at::randn({1, 4, 5, 8});
  omni::pipeline::RingAttention ring(nullptr, {5});
  omni::pipeline::UlyssesAttention ulysses(nullptr, {5}, &ring);
  auto ref = reference(q, k, v, 1.0 / std::sqrt(8.0)).out;
  for (auto kind : {omni::models::AttentionKind::kSelf, omni::models::AttentionKind::kCross}) {
    EXPECT_LT(max_abs_err(ring.attend(q, k, v, kind), ref), 1e-6);
    EXPECT_LT(max_abs_err(ulysses.attend(q, k, v, kind), ref), 1e-6);
  }
}

}  // namespace
