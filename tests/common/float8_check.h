// A model test's check of the float8 holding rule (models/fp8_weights.h) on a model whose HSDP units are more than
// its blocks (VACE's blocks before them, Animate's face adapters between them).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "models/fp8_weights.h"
#include "models/module.h"

namespace omni::test_util {

// --fp8-layers all keeps the first and last numbered blocks in the run dtype: every Linear weight of
// blocks.<num_blocks - 1> says so, and numbered_blocks counts num_blocks.
inline void expect_last_block_kept(const models::Module& model, int num_blocks) {
  const auto params = model.parameters();
  ASSERT_EQ(models::numbered_blocks(params), num_blocks);
  models::WeightHolding all;
  all.float8 = true;
  all.layers = models::Fp8Layers::kAll;
  const std::string last = "blocks." + std::to_string(num_blocks - 1) + ".";
  int checked = 0;
  for (const auto& p : params) {
    if (p.scale == nullptr || p.name.rfind(last, 0) != 0) continue;
    EXPECT_EQ(models::float8_kept_reason(p, all, models::numbered_blocks(params)), "first or last block") << p.name;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

}  // namespace omni::test_util
