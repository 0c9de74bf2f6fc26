// ParallelConfig validation and the rank layout (docs/DESIGN.md section 4).
#include "dist/parallel_config.h"

#include <gtest/gtest.h>

#include "core/error.h"

using omni::dist::Layout;
using omni::dist::ParallelConfig;
using omni::dist::resolve_layout;

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
  EXPECT_EQ(l.groups(omni::dist::group_kind("shard")), (Groups{{0, 1, 2, 3}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("replicate")), (Groups{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("dp")), (Groups{{0, 1, 2, 3}}));
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
  EXPECT_EQ(l.groups(omni::dist::group_kind("shard")), (Groups{{0, 1}, {2, 3}}));      // contiguous blocks
  EXPECT_EQ(l.groups(omni::dist::group_kind("replicate")), (Groups{{0, 2}, {1, 3}}));  // strided
  EXPECT_EQ(l.groups(omni::dist::group_kind("ulysses")), (Groups{{0, 1}, {2, 3}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("cfg")), (Groups{{0, 2}, {1, 3}}));
  EXPECT_EQ(l.group_of(omni::dist::group_kind("cfg"), 3), (std::vector<int>{1, 3}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("video")), (Groups{{0, 1, 2, 3}}));  // cfg 2 x ulysses 2: one video group
  for (int r = 0; r < 4; ++r) EXPECT_EQ(l.writes_video(r), r == 0) << "rank " << r;
}

TEST(ParallelConfig, EightRanksAllAxes) {
  ParallelConfig pc;
  pc.ulysses_degree = 2;
  pc.ring_degree = 2;
  Layout l = resolve_layout(pc, 8);
  EXPECT_EQ(l.dp, 2);
  EXPECT_EQ(l.groups(omni::dist::group_kind("ulysses")), (Groups{{0, 1}, {2, 3}, {4, 5}, {6, 7}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("ring")), (Groups{{0, 2}, {1, 3}, {4, 6}, {5, 7}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("sp")), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("dp")), (Groups{{0, 4}, {1, 5}, {2, 6}, {3, 7}}));
  EXPECT_EQ(l.groups(omni::dist::group_kind("video")), (Groups{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  // One writer per video group: its first rank.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(l.writes_video(r), r == 0 || r == 4) << "rank " << r;
  // Every axis partitions the world.
  for (const char* kind : {"dp", "cfg", "ring", "ulysses", "sp", "shard", "replicate", "video"}) {
    std::vector<int> seen(8, 0);
    for (const auto& g : l.groups(omni::dist::group_kind(kind)))
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
  EXPECT_EQ(l.groups(omni::dist::group_kind("shard")), (Groups{{0}, {1}, {2}}));
  EXPECT_EQ(l.dp, 3);
}

// --layout auto (issue 14): dp while videos fill the groups, then cfg 2, then Ulysses dividing the heads, ring
// for the rest; never a degree above the tokens it splits.
namespace {
omni::dist::ParallelConfig choose(int world, int videos, bool guidance, int heads, int64_t tokens,
                                  std::string* reason = nullptr) {
  omni::dist::LayoutWork w;
  w.videos = videos;
  w.guidance = guidance;
  w.heads = heads;
  w.min_tokens = tokens;
  return omni::dist::choose_parallel(omni::dist::ParallelConfig{}, world, w, reason);
}
// "dp x cfg x ring x ulysses" of a choice (dp is what the degrees leave).
std::string degrees(int world, const omni::dist::ParallelConfig& pc) {
  const int product = pc.cfg_parallel_size * pc.ring_degree * pc.ulysses_degree;
  return std::to_string(world / product) + "x" + std::to_string(pc.cfg_parallel_size) + "x" +
         std::to_string(pc.ring_degree) + "x" + std::to_string(pc.ulysses_degree);
}
}  // namespace

TEST(AutoLayout, PrefersDataThenCfgThenUlyssesThenRing) {
  std::string reason;
  EXPECT_EQ(degrees(4, choose(4, 1, true, 40, 10000, &reason)), "1x2x1x2");
  EXPECT_EQ(reason, "auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 40 heads");
  EXPECT_EQ(degrees(4, choose(4, 8, true, 40, 10000)), "4x1x1x1");
  EXPECT_EQ(degrees(4, choose(4, 4, true, 40, 10000)), "4x1x1x1");
  EXPECT_EQ(degrees(4, choose(4, 3, true, 40, 10000)), "1x2x1x2");  // 2 groups would idle one in round 2
  EXPECT_EQ(degrees(4, choose(4, 6, true, 40, 10000)), "2x2x1x1");
  EXPECT_EQ(degrees(4, choose(4, 5, true, 40, 10000)), "1x2x1x2");
  EXPECT_EQ(degrees(8, choose(8, 100, true, 40, 10000)), "4x2x1x1");  // 25 rounds of 4 rather than 13 of 8
  EXPECT_EQ(degrees(4, choose(4, 2, true, 40, 10000)), "2x2x1x1");
  EXPECT_EQ(degrees(4, choose(4, 2, false, 40, 10000)), "2x1x1x2");
  EXPECT_EQ(degrees(4, choose(4, 1, false, 40, 10000, &reason)), "1x1x1x4");
  EXPECT_EQ(reason, "auto: 1 video on 4 ranks: ulysses 4; 40 heads, no guidance");
  EXPECT_EQ(degrees(8, choose(8, 1, true, 40, 10000)), "1x2x1x4");
  EXPECT_EQ(degrees(8, choose(8, 1, true, 24, 10000)), "1x2x1x4");
  EXPECT_EQ(degrees(16, choose(16, 1, true, 24, 10000)), "1x2x1x8");
  EXPECT_EQ(degrees(32, choose(32, 1, true, 24, 10000)), "1x2x2x8");  // 24 heads: Ulysses 8 at most, ring 2
  EXPECT_EQ(degrees(6, choose(6, 1, true, 40, 10000)), "1x2x3x1");    // 3 does not divide 40: ring 3
  EXPECT_EQ(degrees(4, choose(4, 1, false, 6, 10000)), "1x1x2x2");
  EXPECT_EQ(degrees(1, choose(1, 5, true, 40, 10000, &reason)), "1x1x1x1");
  EXPECT_EQ(reason, "auto: 5 videos on 1 rank: one rank; 40 heads");
}

TEST(AutoLayout, KeepsUlyssesInsideANode) {
  // 2 nodes of 4: Ulysses 4 inside each node, the ring across them (one node of 8: Ulysses 8).
  std::string reason;
  auto on_nodes = [&](int world, int node_ranks, int videos, bool guidance, int heads) {
    omni::dist::LayoutWork w;
    w.videos = videos;
    w.guidance = guidance;
    w.heads = heads;
    w.min_tokens = 10000;
    w.node_ranks = node_ranks;
    return degrees(world, omni::dist::choose_parallel(omni::dist::ParallelConfig{}, world, w, &reason));
  };
  EXPECT_EQ(on_nodes(8, 0, 1, false, 40), "1x1x1x8");
  EXPECT_EQ(on_nodes(8, 8, 1, false, 40), "1x1x1x8");
  EXPECT_EQ(on_nodes(8, 4, 1, false, 40), "1x1x2x4");
  EXPECT_EQ(reason,
            "auto: 1 video on 8 ranks: ulysses 4 x ring 2; 40 heads, no guidance; Ulysses inside a node of 4 "
            "ranks");
  EXPECT_EQ(on_nodes(8, 4, 1, true, 40), "1x2x1x4");   // cfg across the nodes already
  EXPECT_EQ(on_nodes(16, 2, 1, true, 40), "1x2x4x2");  // 8 nodes of 2
  EXPECT_EQ(on_nodes(4, 1, 1, false, 40), "1x1x4x1");  // one rank per node: no Ulysses at all
  EXPECT_EQ(on_nodes(8, 4, 8, true, 40), "8x1x1x1");   // data parallelism needs no exchange
}

TEST(AutoLayout, NeverSplitsBelowOneTokenPerRank) {
  // 2 tokens: Ulysses 2 at most; the other 2 ranks become a second (repeating) group.
  EXPECT_EQ(degrees(8, choose(8, 1, true, 40, 2)), "2x2x1x2");
  EXPECT_EQ(degrees(4, choose(4, 1, false, 3, 2)), "2x1x2x1");  // 3 heads: no Ulysses; ring 2
  EXPECT_EQ(degrees(4, choose(4, 1, true, 40, 1)), "2x2x1x1");
}

TEST(AutoLayout, ResolvesToAValidLayout) {
  for (int world : {1, 2, 3, 4, 6, 8, 12, 16})
    for (int videos : {1, 2, 3, 5, 8, 100})
      for (bool guidance : {false, true})
        for (int heads : {1, 8, 12, 24, 40})
          for (int64_t tokens : {1, 3, 64, 100000}) {
            auto pc = choose(world, videos, guidance, heads, tokens);
            const auto l = omni::dist::resolve_layout(pc, world);
            EXPECT_EQ(heads % l.ulysses, 0);
            EXPECT_LE(l.ulysses * l.ring, tokens);
            EXPECT_LE(l.cfg, guidance ? 2 : 1);
          }
}
