// DeviceMesh: this rank's sub-communicator for each group kind of a Layout (docs/DESIGN.md section 4).
//
// The Layout (dist/parallel_config.h) is pure integer logic that every rank evaluates alike; the
// mesh turns it into MPI communicators with one split per kind, in a fixed order on every rank. Each
// communicator's rank order is the group's sorted world-rank order, so group rank i is group_ranks()[i].
#pragma once

#include <array>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/parallel_config.h"
#include "dist/topology.h"

namespace omni::dist {

class DeviceMesh {
 public:
  // Collective over `world`, whose size must equal layout.world_size. The mesh keeps its own duplicate
  // of `world`, so the caller's communicator may go away. The ranks' nodes are discovered (Topology::discover)
  // and the layout's positions placed on them node by node (dist/topology.h). Groups that should stay inside a
  // node and cannot (a shard size that does not divide the ranks per node, unequal nodes) are one warning on
  // rank 0, or with `strict_topology` a usage error (exit 2) on every rank.
  DeviceMesh(const dist::Layout& layout, const Communicator& world, bool strict_topology = false);
  // The same on a given topology (tests: nodes simulated on one host).
  DeviceMesh(const dist::Layout& layout, const Communicator& world, const Topology& topology,
             bool strict_topology = false);
  DeviceMesh(const DeviceMesh&) = delete;
  DeviceMesh& operator=(const DeviceMesh&) = delete;
  DeviceMesh(DeviceMesh&&) = default;
  DeviceMesh& operator=(DeviceMesh&&) = default;

  const dist::Layout& layout() const { return layout_; }
  const Communicator& world() const { return world_; }
  int rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }
  // This rank's position in the layout arithmetic (dist::Layout's "rank"): what dp_index, writes_video, ...
  // take. Equal to rank() on one node.
  int position() const { return placement_.position_of[static_cast<size_t>(rank())]; }
  int position_of(int world_rank) const { return placement_.position_of[static_cast<size_t>(world_rank)]; }
  const Topology& topology() const { return topology_; }
  const Placement& placement() const { return placement_; }

  // This rank's communicator of `kind`.
  const Communicator& group(GroupKind kind) const { return groups_[static_cast<size_t>(kind)]; }
  // The world ranks of this rank's group of `kind`, in layout order (ascending positions): entry i is group
  // rank i.
  const std::vector<int>& group_ranks(GroupKind kind) const { return ranks_[static_cast<size_t>(kind)]; }

  // Every group of one kind in world ranks (layout order) and the nodes each spans, computed once with the mesh:
  // what the dry-run listing, the report's topology and the traffic estimate all read.
  struct PlacedGroups {
    std::vector<std::vector<int>> ranks;  // world ranks, per group
    std::vector<int> nodes;               // nodes spanned, per group
    int max_nodes() const;
  };
  const PlacedGroups& placed(GroupKind kind) const { return placed_[static_cast<size_t>(kind)]; }

  const Communicator& dp() const { return groups_[0]; }
  const Communicator& cfg() const { return groups_[1]; }
  const Communicator& ring() const { return groups_[2]; }
  const Communicator& ulysses() const { return groups_[3]; }
  const Communicator& sp() const { return groups_[4]; }
  const Communicator& shard() const { return groups_[5]; }
  const Communicator& replicate() const { return groups_[6]; }
  // The ranks that make this rank's videos together (cfg x ring x ulysses); group rank 0 writes them.
  const Communicator& video() const { return groups_[7]; }

  // One line per kind naming this rank's group, for debug logs: "shard [0 1] replicate [0 2] ...".
  std::string describe() const;

 private:
  dist::Layout layout_;
  Communicator world_;
  Topology topology_;
  Placement placement_;
  std::array<Communicator, kGroupKinds> groups_;     // by GroupKind
  std::array<std::vector<int>, kGroupKinds> ranks_;  // by GroupKind
  std::array<PlacedGroups, kGroupKinds> placed_;     // by GroupKind
};

}  // namespace omni::dist
