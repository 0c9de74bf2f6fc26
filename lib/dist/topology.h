// Where the ranks run, and where each sits in the layout (docs/DESIGN.md section 4a).
//
// HSDP gathers every block's weights once per transformer call and Ulysses exchanges q, k, v and the output of
// every attention: those belong on a node's fast links (NVLink), replication and data parallelism across nodes.
// The layout arithmetic (dist::Layout) numbers *positions*: shard groups are contiguous blocks of positions,
// Ulysses groups the innermost contiguous runs, then ring, cfg and dp outward. The placement maps positions to
// world ranks node by node (the ranks of node 0 in world order, then node 1, ...), so whatever order the
// launcher gave the ranks (mpirun --map-by node, Slurm's cyclic distribution), every group that fits in a node
// is inside one, and a group larger than a node is made of whole nodes. On one node the placement is the
// identity.
#pragma once

#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/parallel_config.h"

namespace omni::dist {

struct Topology {
  std::vector<std::string> hostnames;  // per world rank
  std::vector<int> node_of;            // per world rank: 0 .. nodes() - 1, numbered by their lowest world rank

  int nodes() const;
  int world_size() const { return static_cast<int>(node_of.size()); }
  std::vector<int> ranks_of(int node) const;  // world ranks on `node`, ascending

  // Collective over `world`: each rank's hostname, and its node as MPI_COMM_TYPE_SHARED groups the ranks (the
  // ranks that can share memory: one host).
  static Topology discover(const Communicator& world);
  // For tests and tools: nodes given per world rank, hostnames "node<N>".
  static Topology of_nodes(const std::vector<int>& node_of);
};

// Position -> world rank (rank_at) and its inverse (position_of).
struct Placement {
  std::vector<int> rank_at;
  std::vector<int> position_of;

  static Placement identity(int world_size);
};

// Ranks ordered by (node, world rank).
Placement place_by_node(const Topology& topology);

// How one kind of group lies on the nodes. A kind's groups are strided inside the block of positions that holds
// them and the axes inside it: Ulysses' own groups, ring's sequence-parallel block (ring x ulysses), CFG's video
// group (cfg x ring x ulysses), shard's own blocks. A block that fits in a node should sit in one; a larger one
// on as few nodes as its size needs. Then the kind crosses nodes only where its size makes it (CFG across the
// nodes of one video group larger than a node: the axis with the least traffic goes over the network).
struct GroupSpan {
  GroupKind kind = GroupKind::kDp;
  int groups = 0;       // how many groups of this kind
  int size = 0;         // ranks per group
  int max_nodes = 0;    // the most nodes one group spans
  int block = 0;        // ranks per block (see above); dp and replicate: the world
  int block_nodes = 0;  // the most nodes one block spans
  int needed = 0;       // the fewest nodes a block of this size can span: ceil(block / the largest node)
  bool crosses() const { return block_nodes > needed; }
};

// The spans of every kind the layout uses (dp, cfg, ring, ulysses, shard, replicate), world ranks through
// `placement`. Kinds of one rank per group are left out.
std::vector<GroupSpan> group_spans(const dist::Layout& layout, const Topology& topology, const Placement& placement);

// The kinds that should stay inside a node (or on whole nodes) and do not: shard, ulysses, ring, cfg. Empty
// when the placement keeps them all. One line, for a warning or (--strict-topology) an error: which groups cross
// nodes, the ranks per node, and the sizes that would fit.
std::string crossing_message(const dist::Layout& layout, const Topology& topology, const Placement& placement);

// "2 nodes: h0 (ranks 0,2,4,6), h1 (ranks 1,3,5,7)".
std::string describe_nodes(const Topology& topology);

}  // namespace omni::dist
