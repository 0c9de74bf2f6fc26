// What only a GPU can check (ctest label `gpu`, run by tools/gpu/check.sh on the H200 machine; never by the
// CPU suite): --device selection, the NCCL process group at world size 1 (NCCL refuses two ranks on one
// GPU), the collective watchdog seeing NCCL work finish, CUDA-event timing, the fused attention kernels
// that ring attention uses, and the rotary tables staying on the device.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/device_clock.h"
#include "core/error.h"
#include "core/timer.h"
#include "dist/communicator.h"
#include "dist/device.h"
#include "dist/process_group.h"
#include "dist/watchdog.h"
#include "models/wan_rotary_pos_embed.h"
#include "pipeline/sequence_parallel.h"
#include "tensor_check.h"

namespace {

using omni::dist::Communicator;

using omni::test_util::max_abs_err;

TEST(Gpu, DeviceAutoPicksTheGpuAndMakesItCurrent) {
  ASSERT_GT(omni::dist::visible_gpu_count(), 0) << "the gpu tests need a visible GPU";
  const auto device = omni::dist::select_device(omni::dist::DeviceRequest{}, Communicator::world(), false);
  EXPECT_TRUE(device.is_cuda());
  EXPECT_EQ(device.index(), 0);  // node-local rank 0
  EXPECT_EQ(c10::cuda::current_device(), 0);
  EXPECT_THROW(
      omni::dist::select_device(omni::dist::DeviceRequest::parse("cuda:99", "--device"), Communicator::world(), false),
      omni::Error);
}

TEST(Gpu, NcclCollectivesAtWorldSizeOne) {
  const at::Device dev(at::kCUDA, 0);
  auto pg = omni::dist::make_process_group(Communicator::world(), dev, "world");
  ASSERT_STREQ(pg->backend_name(), "nccl");
  for (auto type : {at::kFloat, at::kBFloat16, at::kLong}) {
    auto in = at::arange(1000, at::TensorOptions().dtype(type).device(dev));
    auto out = at::zeros_like(in);
    pg->all_gather_into_flat(out, in)->wait();
    EXPECT_EQ(max_abs_err(out, in), 0.0) << "all_gather " << type;
    out.zero_();
    pg->all_gather_v(out, in, {1000})->wait();
    EXPECT_EQ(max_abs_err(out, in), 0.0) << "all_gather_v " << type;
    out.zero_();
    pg->all_to_all(out, in)->wait();
    EXPECT_EQ(max_abs_err(out, in), 0.0) << "all_to_all " << type;
    out.zero_();
    pg->all_to_all_v(out, in, {1000}, {1000})->wait();
    EXPECT_EQ(max_abs_err(out, in), 0.0) << "all_to_all_v " << type;
    auto b = in.clone();
    pg->broadcast(b, 0)->wait();
    EXPECT_EQ(max_abs_err(b, in), 0.0) << "broadcast " << type;
    auto r = in.clone();
    pg->all_reduce(r)->wait();
    EXPECT_EQ(max_abs_err(r, in), 0.0) << "all_reduce " << type;
  }
  pg->barrier()->wait();
  c10::cuda::device_synchronize();
  // Every collective finished on the device: the watchdog drops them at its next poll.
  omni::dist::CollectiveWatchdog::instance().check_now();
  EXPECT_EQ(omni::dist::CollectiveWatchdog::instance().pending(), 0u);
}

TEST(Gpu, DeviceClockTimesTheKernelsNotTheQueueing) {
  const at::Device dev(at::kCUDA, 0);
  auto a = at::randn({8192, 8192}, at::TensorOptions().dtype(at::kBFloat16).device(dev));
  at::matmul(a, a);  // warm-up (cuBLAS handle, workspace)
  c10::cuda::device_synchronize();
  omni::DeviceClock clock(dev);
  omni::Timer host;
  auto m0 = clock.mark();
  for (int i = 0; i < 20; ++i) at::matmul(a, a);
  auto m1 = clock.mark();
  const double device_s = omni::DeviceClock::seconds(m0, m1);  // blocks until the products are done
  const double host_s = host.seconds();
  // 20 x 2 x 8192^3 = 22 TFLOP: at least 22 ms even at 1000 TFLOP/s; the host queued them in far less.
  std::printf("20 bf16 8192^3 products: device %.4f s (%.0f TFLOP/s), host after sync %.4f s\n", device_s,
              20 * 2 * std::pow(8192.0, 3) / device_s / 1e12, host_s);
  EXPECT_GT(device_s, 0.022);
  EXPECT_LE(device_s, host_s * 1.01 + 1e-3);
}

TEST(Gpu, FusedBlockAttentionMatchesTheFloat32Composition) {
  const at::Device dev(at::kCUDA, 0);
  at::manual_seed(3);
  auto q = at::randn({1, 4, 700, 128}, dev), k = at::randn({1, 4, 900, 128}, dev), v = at::randn({1, 4, 900, 128}, dev);
  const double scale = 1.0 / std::sqrt(128.0);
  auto ref = omni::pipeline::block_attention_math(q, k, v, scale);
  // float32: the memory-efficient kernel (float32 arithmetic; TF32 is off for it).
  auto f32 = omni::pipeline::block_attention(q, k, v, scale);
  ASSERT_EQ(f32.lse.sizes(), ref.lse.sizes());
  EXPECT_LT(max_abs_err(f32.out, ref.out), 1e-4);
  EXPECT_LT(max_abs_err(f32.lse, ref.lse), 1e-4);
  // bfloat16: the flash kernel; its output is rounded once to bfloat16 (2^-9 relative of |out| <= max|v|).
  auto qb = q.to(at::kBFloat16), kb = k.to(at::kBFloat16), vb = v.to(at::kBFloat16);
  auto bf = omni::pipeline::block_attention(qb, kb, vb, scale);
  auto ref_b = omni::pipeline::block_attention_math(qb, kb, vb, scale);
  EXPECT_EQ(bf.out.scalar_type(), at::kFloat);
  EXPECT_LE(max_abs_err(bf.out, ref_b.out), std::ldexp(vb.abs().max().item<double>(), -8));
  EXPECT_LT(max_abs_err(bf.lse, ref_b.lse), 1e-2);
}

TEST(Gpu, RotaryTablesAreBuiltOncePerGridAndStayOnTheDevice) {
  omni::models::WanRotaryPosEmbed rope(128, 1024);
  const at::Device dev(at::kCUDA, 0);
  auto a = rope.forward(21, 30, 52, dev);
  auto b = rope.forward(21, 30, 52, dev);
  EXPECT_TRUE(a.cos.is_cuda());
  EXPECT_EQ(a.cos.data_ptr(), b.cos.data_ptr());
  EXPECT_EQ(a.cos.size(0), 21 * 30 * 52);
  auto cpu = rope.forward(21, 30, 52, at::kCPU);
  EXPECT_EQ(max_abs_err(a.cos, cpu.cos), 0.0);
  EXPECT_EQ(max_abs_err(a.sin, cpu.sin), 0.0);
}

}  // namespace

int main(int argc, char** argv) {
  omni::dist::MpiEnvironment mpi(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
