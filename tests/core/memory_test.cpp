// core/memory.h: a whole run's peak survives the resets that a phase makes for its own figure (the decode
// resets the kernel's VmHWM and CUDA's allocator peak; the report's peaks are the run's, issue 38).
#include "core/memory.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>

namespace {

TEST(RunPeak, KeepsThePeakSeenBeforeEachReset) {
  omni::RunPeak p;
  EXPECT_EQ(p.read(100), 100);
  p.before_reset(100);  // the counter restarts from what is in use now
  EXPECT_EQ(p.read(40), 100) << "a reset forgot the denoising peak";
  EXPECT_EQ(p.read(150), 150);
  p.before_reset(150);
  p.before_reset(30);  // a second reset with a lower counter keeps the higher mark
  EXPECT_EQ(p.read(20), 150);
}

TEST(RunPeak, HostPeakSurvivesResetPeakRss) {
  // 256 MiB touched and freed (mapped, so it goes back to the kernel), then a phase's reset: the run's peak
  // still holds it, and the phase's own peak does not.
  constexpr size_t kBytes = size_t{256} << 20;
  const int64_t before = omni::current_rss_bytes();
  {
    std::unique_ptr<char[]> big(new char[kBytes]);
    std::memset(big.get(), 1, kBytes);
    ASSERT_GE(omni::peak_rss_bytes(), before + static_cast<int64_t>(kBytes) * 9 / 10);
  }
  omni::reset_peak_rss();
  EXPECT_GE(omni::peak_rss_bytes(), before + static_cast<int64_t>(kBytes) * 9 / 10)
      << "reset_peak_rss lost the run's peak";
  EXPECT_LT(omni::peak_rss_since_reset_bytes(), before + static_cast<int64_t>(kBytes) / 2)
      << "the phase's peak still counts memory freed before its reset";
}

}  // namespace
