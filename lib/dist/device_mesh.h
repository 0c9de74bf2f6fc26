// DeviceMesh: this rank's sub-communicator for each group kind of a Layout (docs/DESIGN.md section 4).
//
// The Layout (lib/config/parallel_config.h) is pure integer logic that every rank evaluates alike; the
// mesh turns it into MPI communicators with one split per kind, in a fixed order on every rank. Each
// communicator's rank order is the group's sorted world-rank order, so group rank i is group_ranks()[i].
#pragma once

#include <array>
#include <string>
#include <vector>

#include "config/parallel_config.h"
#include "dist/communicator.h"

namespace omni::dist {

class DeviceMesh {
 public:
  // The group kinds, in the order the splits are made: "dp", "cfg", "ring", "ulysses", "sp", "shard",
  // "replicate", "video" (config::Layout::groups).
  static const std::array<const char*, 8>& kinds();

  // Collective over `world`, whose size must equal layout.world_size. The mesh keeps its own duplicate
  // of `world`, so the caller's communicator may go away.
  DeviceMesh(const config::Layout& layout, const Communicator& world);
  DeviceMesh(const DeviceMesh&) = delete;
  DeviceMesh& operator=(const DeviceMesh&) = delete;
  DeviceMesh(DeviceMesh&&) = default;
  DeviceMesh& operator=(DeviceMesh&&) = default;

  const config::Layout& layout() const { return layout_; }
  const Communicator& world() const { return world_; }
  int rank() const { return world_.rank(); }
  int world_size() const { return world_.size(); }

  // This rank's communicator of `kind` (one of kinds(); anything else is an internal error).
  const Communicator& group(const std::string& kind) const;
  // The world ranks of this rank's group of `kind`, sorted; position i is group rank i.
  const std::vector<int>& group_ranks(const std::string& kind) const;

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
  size_t index_of(const std::string& kind) const;

  config::Layout layout_;
  Communicator world_;
  std::array<Communicator, 8> groups_;
  std::array<std::vector<int>, 8> ranks_;
};

}  // namespace omni::dist
