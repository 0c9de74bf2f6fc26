// ParallelConfig validation and the rank layout (docs/DESIGN.md section 4).
#include <gtest/gtest.h>

#include "config/parallel_config.h"
#include "core/error.h"

using omni::config::Layout;
using omni::config::ParallelConfig;
using omni::config::resolve_layout;

namespace {
std::string usage_error(const ParallelConfig& pc, int world) {
  try {
    resolve_layout(pc, world);
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  ADD_FAILURE() << "expected a usage error";
  return "";
}
using Groups = std::vector<std::vector<int>>;
}  // namespace

TEST(ParallelConfig, StandaloneHsdp) {
  ParallelConfig pc;
  pc.use_hsdp = true;
  pc.hsdp_shard_size = 4;
  Layout l = resolve_layout(pc, 4);
  EXPECT_EQ(l.hsdp_replicate, 1);
  EXPECT_EQ(l.hsdp_shard, 4);
  EXPECT_EQ(l.dp, 4);
  EXPECT_EQ(l.groups("shard"), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(l.groups("replicate"), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(l.groups("dp"), (Groups{{0, 1, 2, 3}}));
}

TEST(ParallelConfig, AutoShardAndReplicateGroups) {
  ParallelConfig pc;
  pc.use_hsdp = true;
  pc.ulysses_degree = 2;
  pc.cfg_parallel_size = 2;
  pc.hsdp_replicate_size = 2;
  Layout l = resolve_layout(pc, 4);
  EXPECT_EQ(l.hsdp_shard, 2);
  EXPECT_EQ(l.dp, 1);
  EXPECT_EQ(l.groups("shard"), (Groups{{0, 1}, {2, 3}}));      // contiguous blocks
  EXPECT_EQ(l.groups("replicate"), (Groups{{0, 2}, {1, 3}}));  // strided
  EXPECT_EQ(l.groups("ulysses"), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(l.groups("cfg"), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(l.group_of("cfg", 3), (std::vector<int>{1, 3}));
}

TEST(ParallelConfig, EightRanksAllAxes) {
  ParallelConfig pc;
  pc.ulysses_degree = 2;
  pc.ring_degree = 2;
  Layout l = resolve_layout(pc, 8);
  EXPECT_EQ(l.dp, 2);
  EXPECT_EQ(l.groups("ulysses"), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(l.groups("ring"), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(l.groups("sp"), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(l.groups("dp"), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  // Every axis partitions the world.
  for (const char* kind : {"dp", "cfg", "ring", "ulysses", "sp", "shard", "replicate"}) {
    std::vector<int> seen(8, 0);
    for (const auto& g : l.groups(kind))
      for (int r : g) seen[r]++;
    for (int r = 0; r < 8; ++r) EXPECT_EQ(seen[r], 1) << kind << " rank " << r;
  }
}

TEST(ParallelConfig, Verdicts) {
  ParallelConfig pc;
  pc.use_hsdp = true;
  pc.hsdp_shard_size = 3;
  EXPECT_NE(usage_error(pc, 4).find("replicate 1 x shard 3 = 3 does not equal world size 4"), std::string::npos);

  pc = {};
  pc.use_hsdp = true;
  EXPECT_NE(usage_error(pc, 4).find("standalone HSDP needs an explicit --hsdp-shard-size"), std::string::npos);

  pc = {};
  pc.use_hsdp = true;
  pc.ulysses_degree = 4;
  pc.hsdp_replicate_size = 3;
  EXPECT_NE(usage_error(pc, 4).find("replicate 3 must divide world size 4"), std::string::npos);

  pc = {};
  pc.use_hsdp = true;
  pc.hsdp_shard_size = 4;
  pc.tensor_parallel_size = 2;
  EXPECT_NE(
      usage_error(pc, 4).find("HSDP and tensor parallelism are mutually exclusive; tensor parallel size must be 1"),
      std::string::npos);

  pc = {};
  pc.tensor_parallel_size = 2;
  EXPECT_NE(usage_error(pc, 2).find("tensor parallelism is not supported (use HSDP with sequence parallelism)"),
            std::string::npos);

  pc = {};
  pc.ulysses_degree = 3;
  auto msg = usage_error(pc, 4);
  EXPECT_NE(msg.find("the product of parallel degrees (3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("must divide world size 4"), std::string::npos) << msg;

  pc = {};
  pc.cfg_parallel_size = 3;
  EXPECT_NE(usage_error(pc, 1).find("cfg parallel size must be 1 or 2"), std::string::npos);

  pc = {};
  pc.hsdp_shard_size = 2;
  EXPECT_NE(usage_error(pc, 1).find("--hsdp-shard-size needs --use-hsdp"), std::string::npos);
}

TEST(ParallelConfig, WithoutHsdpEveryRankHoldsEverything) {
  Layout l = resolve_layout(ParallelConfig{}, 3);
  EXPECT_FALSE(l.use_hsdp);
  EXPECT_EQ(l.hsdp_shard, 1);
  EXPECT_EQ(l.groups("shard"), (Groups{{0}, {1}, {2}}));
  EXPECT_EQ(l.dp, 3);
}
