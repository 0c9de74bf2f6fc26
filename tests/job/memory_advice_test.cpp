// The memory check's advice (job::memory_advice): for each kind of largest part, the one change that shrinks that
// part names the flag that makes it, on the layouts and dtypes where it applies and not elsewhere.
#include <gtest/gtest.h>

#include <string>

#include "job/memory_check.h"

namespace omni::job {
namespace {

using pipeline::MemoryKind;

// A plan whose peak phase has one big part of `kind` next to a small one of another kind.
pipeline::MemoryPlan plan_with_largest(MemoryKind kind) {
  pipeline::MemoryPlan plan;
  pipeline::MemoryPhase phase;
  phase.name = "denoise";
  phase.parts.push_back({"small", 1 << 20, kind == MemoryKind::kOther ? MemoryKind::kWeights : MemoryKind::kOther});
  phase.parts.push_back({"big", 1 << 30, kind});
  plan.phases.push_back(phase);
  return plan;
}

dist::Layout layout(int world, int ulysses, bool hsdp, int shard) {
  dist::Layout l;
  l.world_size = world;
  l.ulysses = ulysses;
  l.dp = world / ulysses;
  l.use_hsdp = hsdp;
  l.hsdp_shard = hsdp ? shard : 1;
  l.hsdp_replicate = world / l.hsdp_shard;
  return l;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

TEST(MemoryAdvice, WeightsAskForShardingOrHalfPrecision) {
  config::GenerateOptions run;
  run.dtype = c10::ScalarType::BFloat16;
  const auto whole = memory_advice(plan_with_largest(MemoryKind::kWeights), run, layout(4, 1, false, 1));
  EXPECT_TRUE(has(whole, "--use-hsdp")) << whole;
  EXPECT_FALSE(has(whole, "--dtype bfloat16")) << whole;  // already bfloat16
  const auto sharded = memory_advice(plan_with_largest(MemoryKind::kWeights), run, layout(4, 1, true, 2));
  EXPECT_TRUE(has(sharded, "a larger --hsdp-shard-size (now 2")) << sharded;
  run.dtype = c10::ScalarType::Float;
  EXPECT_TRUE(
      has(memory_advice(plan_with_largest(MemoryKind::kWeights), run, layout(4, 1, true, 2)), "--dtype bfloat16"));
}

TEST(MemoryAdvice, GatheredUnitsAskForHalfPrecisionFirst) {
  config::GenerateOptions run;
  run.dtype = c10::ScalarType::Float;
  const auto f32 = memory_advice(plan_with_largest(MemoryKind::kGatheredUnits), run, layout(4, 1, true, 4));
  EXPECT_TRUE(has(f32, "--dtype bfloat16")) << f32;
  run.dtype = c10::ScalarType::BFloat16;
  const auto bf16 = memory_advice(plan_with_largest(MemoryKind::kGatheredUnits), run, layout(4, 1, true, 4));
  EXPECT_TRUE(has(bf16, "--hsdp-shard-size")) << bf16;
}

TEST(MemoryAdvice, VaeWeightsAskForTheVaeDtype) {
  config::GenerateOptions run;
  run.vae_dtype = c10::ScalarType::Float;
  EXPECT_TRUE(has(memory_advice(plan_with_largest(MemoryKind::kVaeWeights), run, layout(1, 1, false, 1)),
                  "--vae-dtype bfloat16"));
  run.vae_dtype = c10::ScalarType::BFloat16;
  EXPECT_FALSE(has(memory_advice(plan_with_largest(MemoryKind::kVaeWeights), run, layout(1, 1, false, 1)),
                   "--vae-dtype bfloat16"));
}

TEST(MemoryAdvice, DecodeAsksForVaeParallelOnlyWhereItHelps) {
  config::GenerateOptions run;
  // A video made by 4 ranks: the decode can be split over them.
  const auto split = memory_advice(plan_with_largest(MemoryKind::kDecode), run, layout(4, 4, false, 1));
  EXPECT_TRUE(has(split, "--vae-parallel")) << split;
  EXPECT_TRUE(has(split, "--height")) << split;
  // One rank per video, or already on: a smaller video is what is left.
  const auto alone = memory_advice(plan_with_largest(MemoryKind::kDecode), run, layout(4, 1, false, 1));
  EXPECT_FALSE(has(alone, "--vae-parallel")) << alone;
  run.vae_parallel = true;
  EXPECT_FALSE(
      has(memory_advice(plan_with_largest(MemoryKind::kDecode), run, layout(4, 4, false, 1)), "--vae-parallel"));
}

TEST(MemoryAdvice, ActivationsAskForASmallerVideoOrMoreSequenceRanks) {
  config::GenerateOptions run;
  const auto dp = memory_advice(plan_with_largest(MemoryKind::kOther), run, layout(4, 1, false, 1));
  EXPECT_TRUE(has(dp, "--height")) << dp;
  EXPECT_TRUE(has(dp, "--ulysses-degree")) << dp;  // 4 ranks, each a video of its own
  const auto sp = memory_advice(plan_with_largest(MemoryKind::kOther), run, layout(4, 4, false, 1));
  EXPECT_FALSE(has(sp, "--ulysses-degree")) << sp;  // every rank already on the sequence
}

}  // namespace
}  // namespace omni::job
