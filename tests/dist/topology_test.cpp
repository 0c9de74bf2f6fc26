// The placement of the layout's positions on nodes (dist/topology.h), on topologies written by hand: mpirun's
// --map-by node and --map-by slot, Slurm's cyclic distribution, unequal nodes, a shard size that fits no node.
// Expected groups are worked out here from the node lists, not from the code under test.
#include "dist/topology.h"

#include <gtest/gtest.h>

#include <set>

namespace omni::dist {
namespace {

// HSDP with `shard` ranks per copy and world / shard copies.
dist::Layout layout_of(int world, int ulysses, int ring, int cfg, bool hsdp, int shard) {
  dist::ParallelConfig pc;
  pc.ulysses_degree = ulysses;
  pc.ring_degree = ring;
  pc.cfg_parallel_size = cfg;
  pc.use_hsdp = hsdp;
  pc.hsdp_shard_size = shard;
  pc.hsdp_replicate_size = hsdp && shard > 0 ? world / shard : -1;
  return dist::resolve_layout(pc, world);
}

// The nodes (as sets) that the groups of `kind` touch, in world ranks.
std::vector<std::set<int>> node_sets(const dist::Layout& l, const Topology& t, const Placement& p, const char* kind) {
  std::vector<std::set<int>> out;
  for (const auto& g : l.groups(omni::dist::group_kind(kind))) {
    std::set<int> nodes;
    for (int pos : g) nodes.insert(t.node_of[static_cast<size_t>(p.rank_at[static_cast<size_t>(pos)])]);
    out.push_back(nodes);
  }
  return out;
}

TEST(Topology, MapByNodeKeepsShardUlyssesAndCfgInsideNodes) {
  // 2 hosts x 4 ranks, --map-by node: ranks alternate hosts.
  const Topology t = Topology::of_nodes({0, 1, 0, 1, 0, 1, 0, 1});
  const Placement p = place_by_node(t);
  EXPECT_EQ(p.rank_at, (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p.rank_at[static_cast<size_t>(p.position_of[static_cast<size_t>(r)])], r);
  const dist::Layout l = layout_of(8, 2, 1, 2, true, 4);  // dp 2 x cfg 2 x ulysses 2; shard 4 x replicate 2
  for (const char* kind : {"shard", "ulysses", "cfg"})
    for (const auto& nodes : node_sets(l, t, p, kind)) EXPECT_EQ(nodes.size(), 1u) << kind;
  for (const auto& nodes : node_sets(l, t, p, "replicate")) EXPECT_EQ(nodes.size(), 2u);
  EXPECT_EQ(crossing_message(l, t, p), "");
  // Without the placement (today's contiguous world ranks) every shard group spans both hosts.
  const Placement none = Placement::identity(8);
  for (const auto& nodes : node_sets(l, t, none, "shard")) EXPECT_EQ(nodes.size(), 2u);
  EXPECT_NE(crossing_message(l, t, none).find("shard groups of 4 span up to 2 nodes where 1 would do"),
            std::string::npos)
      << crossing_message(l, t, none);
  EXPECT_EQ(describe_nodes(t), "2 nodes: node0 (ranks 0,2,4,6), node1 (ranks 1,3,5,7)");
}

TEST(Topology, MapBySlotIsTheIdentity) {
  const Topology t = Topology::of_nodes({0, 0, 0, 0, 1, 1, 1, 1});
  const Placement p = place_by_node(t);
  EXPECT_EQ(p.rank_at, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(describe_nodes(t), "2 nodes: node0 (ranks 0-3), node1 (ranks 4-7)");
}

TEST(Topology, ShardLargerThanANodeTakesWholeNodes) {
  // 4 nodes x 2 ranks, Slurm cyclic (rank r on node r % 4); shard 4 = two whole nodes, replicate 2.
  const Topology t = Topology::of_nodes({0, 1, 2, 3, 0, 1, 2, 3});
  const Placement p = place_by_node(t);
  const dist::Layout l = layout_of(8, 1, 1, 1, true, 4);
  const auto shard_nodes = node_sets(l, t, p, "shard");
  ASSERT_EQ(shard_nodes.size(), 2u);
  EXPECT_EQ(shard_nodes[0], (std::set<int>{0, 1}));
  EXPECT_EQ(shard_nodes[1], (std::set<int>{2, 3}));
  EXPECT_EQ(crossing_message(l, t, p), "");
  for (const GroupSpan& s : group_spans(l, t, p)) {
    if (s.kind != omni::dist::GroupKind::kShard) continue;
    EXPECT_EQ(s.max_nodes, 2);
    EXPECT_EQ(s.needed, 2);
    EXPECT_FALSE(s.crosses());
  }
}

TEST(Topology, CfgCrossesWhenOneVideoGroupIsLargerThanANode) {
  // 2 hosts x 4, --map-by node, one video on all 8 ranks: cfg 2 x ring 2 x ulysses 2. Ulysses and ring (the sequence
  // parallel block of 4) stay inside the hosts; the two guidance branches are the two hosts, CFG's one noise
  // prediction per step being the least traffic of the three. No warning: nothing could be placed better.
  const Topology t = Topology::of_nodes({0, 1, 0, 1, 0, 1, 0, 1});
  const Placement p = place_by_node(t);
  const dist::Layout l = layout_of(8, 2, 2, 2, true, 4);
  for (const char* kind : {"shard", "ulysses", "ring"})
    for (const auto& nodes : node_sets(l, t, p, kind)) EXPECT_EQ(nodes.size(), 1u) << kind;
  for (const auto& nodes : node_sets(l, t, p, "cfg")) EXPECT_EQ(nodes, (std::set<int>{0, 1}));
  EXPECT_EQ(crossing_message(l, t, p), "");
  // The same sizes on 4 hosts x 2: the sequence-parallel block of 4 needs two whole hosts, and gets them.
  const Topology four = Topology::of_nodes({0, 1, 2, 3, 0, 1, 2, 3});
  EXPECT_EQ(crossing_message(l, four, place_by_node(four)), "");
  // Ring 3 x Ulysses 2 on 2 hosts x 4 (dp 1 x cfg 1, 12 ranks would be needed for dp 2): a block of 6 on nodes of 4
  // straddles; 3 hosts x 4 and world 12 (two blocks of 6): each block on 2 hosts, as few as 6 ranks need.
  const Topology three = Topology::of_nodes({0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  EXPECT_EQ(crossing_message(layout_of(12, 2, 3, 1, false, -1), three, place_by_node(three)), "");
}

TEST(Topology, SizesThatFitNoNodeAreNamed) {
  // 2 nodes x 3 ranks: shard 2 divides neither 3 nor is it a multiple of it.
  const Topology t = Topology::of_nodes({0, 1, 0, 1, 0, 1});
  const dist::Layout l = layout_of(6, 1, 1, 1, true, 2);
  const std::string m = crossing_message(l, t, place_by_node(t));
  EXPECT_NE(m.find("shard groups of 2 span up to 2 nodes where 1 would do"), std::string::npos) << m;
  EXPECT_NE(m.find("2 nodes x 3 ranks"), std::string::npos) << m;
  // Unequal nodes: 6 + 2 ranks, shard 4.
  const Topology u = Topology::of_nodes({0, 0, 0, 0, 0, 0, 1, 1});
  const std::string mu = crossing_message(layout_of(8, 1, 1, 1, true, 4), u, place_by_node(u));
  EXPECT_NE(mu.find("unequal ranks per node: 6 2"), std::string::npos) << mu;
  // Ulysses 4 on 2 x 2 ranks crosses (sequence parallelism larger than a node is allowed to, but not beyond
  // whole nodes); a one-node run never warns.
  const Topology two = Topology::of_nodes({0, 0, 1, 1});
  EXPECT_EQ(crossing_message(layout_of(4, 4, 1, 1, false, -1), two, place_by_node(two)), "");
  const Topology one = Topology::of_nodes({0, 0, 0, 0, 0, 0});
  EXPECT_EQ(crossing_message(l, one, place_by_node(one)), "");
}

}  // namespace
}  // namespace omni::dist
