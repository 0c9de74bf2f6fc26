// HostToDevice (core/memory.h), the pinned staging path that load_state() uploads weights through: its chunking
// run on the CPU with an injected staging allocator (pinned memory needs CUDA), and on a GPU where there is one.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/memory.h"

namespace omni {
namespace {

// Bit-for-bit equality (NaN payloads and -0.0 included): the same dtype, sizes and bytes.
void expect_same_bits(const at::Tensor& got, const at::Tensor& expected, const std::string& what) {
  ASSERT_EQ(got.scalar_type(), expected.scalar_type()) << what;
  ASSERT_EQ(got.sizes(), expected.sizes()) << what;
  EXPECT_TRUE(got.is_contiguous()) << what;
  const at::Tensor a = got.cpu().contiguous().reshape({-1}).view(at::kByte);
  const at::Tensor b = expected.contiguous().reshape({-1}).view(at::kByte);
  EXPECT_TRUE(at::equal(a, b)) << what;
}

// Tensors of several dtypes and sizes around a 2 x 1024-byte staging buffer: smaller than a half, larger than the
// whole buffer, odd byte counts that leave pieces unaligned, empty, a scalar, not contiguous.
std::vector<std::pair<std::string, at::Tensor>> cases() {
  at::manual_seed(7);
  std::vector<std::pair<std::string, at::Tensor>> out;
  at::Tensor special = at::tensor(
      {0.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(), 1e-45f, -3.5f});
  out.emplace_back("float specials", special);
  out.emplace_back("float [1000] (4000 B, over the buffer)", at::randn({1000}));
  out.emplace_back("bfloat16 [3, 7, 11] (462 B)", at::randn({3, 7, 11}).to(at::kBFloat16));
  out.emplace_back("float16 [5, 101] (1010 B)", at::randn({5, 101}).to(at::kHalf));
  out.emplace_back("int64 [5]", at::arange(5, at::kLong) * 1234567890123LL);
  out.emplace_back("bool [13]", at::rand({13}) > 0.5);
  out.emplace_back("uint8 [1]", at::full({1}, 201, at::kByte));
  out.emplace_back("double scalar", at::scalar_tensor(3.25, at::kDouble));
  out.emplace_back("empty [0, 3]", at::empty({0, 3}));
  out.emplace_back("float [17, 9] transposed", at::randn({17, 9}).t());
  out.emplace_back("int32 [3, 5000] (60000 B, 30 buffers)", at::randint(-1000000, 1000000, {3, 5000}, at::kInt));
  out.emplace_back("int8 [1023]", at::randint(-128, 127, {1023}, at::kChar));
  out.emplace_back("float [1, 1, 1]", at::ones({1, 1, 1}));
  return out;
}

TEST(HostToDevice, CpuReturnsTheTensorItself) {
  HostToDevice upload(at::kCPU);
  at::Tensor t = at::randn({4, 5});
  at::Tensor got = upload.upload(t);
  EXPECT_TRUE(got.is_same(t));  // as load_state() always did on the CPU: no copy
  EXPECT_FALSE(upload.staged());
  EXPECT_EQ(upload.staged_copies(), 0);
  upload.synchronize();
}

TEST(HostToDevice, ChunkedCopiesThroughTheStagingBuffer) {
  int allocations = 0;
  int64_t asked = 0;
  HostToDevice upload(at::kCPU, 2048, [&](int64_t bytes) {
    ++allocations;
    asked = bytes;
    return at::empty({bytes}, at::kByte);
  });
  int64_t total_bytes = 0, pieces_at_least = 0;
  std::vector<at::Tensor> results;
  const auto all = cases();
  for (const auto& [name, t] : all) {
    results.push_back(upload.upload(t));
    const int64_t bytes = t.numel() * static_cast<int64_t>(t.element_size());
    total_bytes += bytes;
    pieces_at_least += (bytes + 1023) / 1024;
  }
  upload.synchronize();
  EXPECT_TRUE(upload.staged());
  EXPECT_EQ(allocations, 1);  // one buffer, reused
  EXPECT_EQ(asked, 2048);
  // A piece is at most a half (1024 B): a tensor over it takes several; every piece was a copy.
  EXPECT_GE(upload.staged_copies(), pieces_at_least);
  EXPECT_GE(upload.half_switches(), total_bytes / 1024 - 1);
  // Checked after all uploads: reusing the buffer changed none of the earlier results.
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_FALSE(results[i].is_same(all[i].second)) << all[i].first;
    expect_same_bits(results[i], all[i].second, all[i].first);
  }
}

TEST(HostToDevice, BufferSizes) {
  // A buffer of odd size: halves rounded down to the alignment (512 B); a tensor of exactly a half, then one byte.
  for (int64_t staging : {int64_t{1024}, int64_t{1500}, int64_t{4097}, int64_t{1} << 20}) {
    HostToDevice upload(at::kCPU, staging, [](int64_t bytes) { return at::empty({bytes}, at::kByte); });
    const int64_t half = staging / 2 / 512 * 512;
    const at::Tensor exact = at::randint(0, 255, {half}, at::kByte);
    const at::Tensor one = at::full({1}, 7, at::kByte);
    const at::Tensor big = at::randn({3 * half + 5}, at::kDouble);
    expect_same_bits(upload.upload(exact), exact, "exact half");
    expect_same_bits(upload.upload(one), one, "one byte");
    expect_same_bits(upload.upload(big), big, "big");
  }
  // Too small for one aligned half: refused.
  HostToDevice tiny(at::kCPU, 1000, [](int64_t bytes) { return at::empty({bytes}, at::kByte); });
  EXPECT_THROW(tiny.upload(at::ones({4})), std::exception);
}

TEST(HostToDevice, FallsBackToPlainCopiesWithoutStaging) {
  // The staging allocation fails (as pinned memory does without CUDA): plain copies, as before.
  int allocations = 0;
  HostToDevice upload(at::kCPU, 4096, [&](int64_t) -> at::Tensor {
    ++allocations;
    throw std::runtime_error("no pinned memory here");
  });
  const at::Tensor t = at::randn({300});
  EXPECT_TRUE(upload.upload(t).is_same(t));
  EXPECT_TRUE(upload.upload(t).is_same(t));
  EXPECT_EQ(allocations, 1);  // not asked again
  EXPECT_FALSE(upload.staged());
  // An allocator returning less than it was asked for is an error, not a silent overrun.
  HostToDevice short_buffer(at::kCPU, 4096, [](int64_t bytes) { return at::empty({bytes / 2}, at::kByte); });
  EXPECT_THROW(short_buffer.upload(t), std::exception);
}

TEST(HostToDevice, CudaPinnedStaging) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  const at::Device dev(at::kCUDA, 0);
  HostToDevice upload(dev, 4096);  // the default allocator: pinned memory
  std::vector<at::Tensor> results;
  const auto all = cases();
  for (const auto& [name, t] : all) results.push_back(upload.upload(t));
  upload.synchronize();
  EXPECT_TRUE(upload.staged());
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_TRUE(results[i].device() == dev) << all[i].first;
    expect_same_bits(results[i], all[i].second, all[i].first);
  }
  // The default size, a tensor of several buffers (the halves alternate while the device copies).
  HostToDevice large(at::Device(at::kCUDA));
  const at::Tensor big = at::randn({3 * (HostToDevice::kDefaultStagingBytes / 4) + 3});
  expect_same_bits(large.upload(big), big, "192 MiB float");
  // A device tensor is moved as it is.
  const at::Tensor on_device = at::ones({3}, at::TensorOptions().device(dev));
  EXPECT_TRUE(upload.upload(on_device).device() == dev);
}

}  // namespace
}  // namespace omni
