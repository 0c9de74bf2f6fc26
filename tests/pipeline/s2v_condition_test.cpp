// Wan2.2-S2V's video size from the reference image (pipeline/s2v_condition.h) against Wan2.2's own
// get_size_less_than_area, run from its source by tools/reference/s2v/record_s2v.py (tests/data/reference/
// s2v-scheduler/size.safetensors: 11 image sizes x 3 areas, [height, width, max_area, HEIGHT, WIDTH]).
#include "pipeline/s2v_condition.h"

#include <gtest/gtest.h>

#include "io/safetensors.h"
#include "test_util.h"

namespace omni::pipeline {
namespace {

TEST(S2vCondition, VideoSizeAsWan) {
  io::SafetensorsFile file(test_util::case_dir("s2v-scheduler") + "/size.safetensors");
  const at::Tensor table = file.read("table");
  ASSERT_EQ(table.size(1), 5);
  ASSERT_GE(table.size(0), 30);
  for (int64_t r = 0; r < table.size(0); ++r) {
    const int64_t h = table[r][0].item<int64_t>(), w = table[r][1].item<int64_t>(), area = table[r][2].item<int64_t>();
    SCOPED_TRACE(std::to_string(h) + "x" + std::to_string(w) + " in " + std::to_string(area));
    const auto [H, W] = s2v_video_size(h, w, area);
    EXPECT_EQ(H, table[r][3].item<int64_t>());
    EXPECT_EQ(W, table[r][4].item<int64_t>());
    EXPECT_LE(H * W, area);
    EXPECT_EQ(H % 64, 0);
    EXPECT_EQ(W % 64, 0);
  }
}

}  // namespace
}  // namespace omni::pipeline
