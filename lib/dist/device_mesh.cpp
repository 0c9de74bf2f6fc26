#include "dist/device_mesh.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace omni::dist {

const std::array<const char*, 8>& DeviceMesh::kinds() {
  static const std::array<const char*, 8> k = {"dp", "cfg", "ring", "ulysses", "sp", "shard", "replicate", "video"};
  return k;
}

DeviceMesh::DeviceMesh(const dist::Layout& layout, const Communicator& world, bool strict_topology)
    : DeviceMesh(layout, world, Topology::discover(world), strict_topology) {}

DeviceMesh::DeviceMesh(const dist::Layout& layout, const Communicator& world, const Topology& topology,
                       bool strict_topology)
    : layout_(layout), topology_(topology) {
  OMNI_CHECK(world.valid(), "DeviceMesh needs a valid world communicator");
  OMNI_CHECK(world.size() == layout.world_size, "the layout was resolved for ", layout.world_size,
             " ranks but the communicator has ", world.size(), " (", layout.summary(), ")");
  OMNI_CHECK(topology.world_size() == world.size(), "a topology of ", topology.world_size(), " ranks for a world of ",
             world.size());
  world_ = world.dup();
  placement_ = place_by_node(topology_);
  // Every rank holds the same topology (all-gathered), so every rank reaches the same verdict.
  const std::string crossing = crossing_message(layout_, topology_, placement_);
  if (!crossing.empty()) {
    OMNI_CHECK_USAGE(!strict_topology, crossing, " (--strict-topology)");
    if (world_.rank() == 0) OMNI_WARN(crossing, "; --strict-topology makes this an error");
  }
  const int me = position();
  for (size_t k = 0; k < kinds().size(); ++k) {
    const auto groups = layout_.groups(kinds()[k]);  // positions
    // Color: the index of the group holding this rank; key: its position in that group (ascending positions),
    // so the new communicator's rank order is the layout's order.
    int color = -1, key = -1;
    for (size_t g = 0; g < groups.size() && color < 0; ++g) {
      auto it = std::find(groups[g].begin(), groups[g].end(), me);
      if (it != groups[g].end()) {
        color = static_cast<int>(g);
        key = static_cast<int>(it - groups[g].begin());
      }
    }
    OMNI_CHECK(color >= 0, "rank ", rank(), " (position ", me, ") is in no '", kinds()[k], "' group of ",
               layout_.summary());
    ranks_[k].clear();
    for (int pos : groups[static_cast<size_t>(color)])
      ranks_[k].push_back(placement_.rank_at[static_cast<size_t>(pos)]);
    groups_[k] = world_.split(color, key);
    OMNI_CHECK(groups_[k].size() == static_cast<int>(ranks_[k].size()) && groups_[k].rank() == key, "split of '",
               kinds()[k], "' gave size ", groups_[k].size(), " rank ", groups_[k].rank(), ", expected size ",
               ranks_[k].size(), " rank ", key);
  }
}

size_t DeviceMesh::index_of(const std::string& kind) const {
  for (size_t k = 0; k < kinds().size(); ++k)
    if (kind == kinds()[k]) return k;
  OMNI_FAIL("unknown group kind '", kind, "' (expected dp, cfg, ring, ulysses, sp, shard or replicate)");
}

const Communicator& DeviceMesh::group(const std::string& kind) const {
  return groups_[index_of(kind)];
}

const std::vector<int>& DeviceMesh::group_ranks(const std::string& kind) const {
  return ranks_[index_of(kind)];
}

std::string DeviceMesh::describe() const {
  std::ostringstream os;
  os << "rank " << rank() << " (position " << position() << ", " << topology_.hostnames[static_cast<size_t>(rank())]
     << "):";
  for (size_t k = 0; k < kinds().size(); ++k) {
    os << " " << kinds()[k] << " [";
    for (size_t i = 0; i < ranks_[k].size(); ++i) os << (i ? " " : "") << ranks_[k][i];
    os << "]";
  }
  return os.str();
}

}  // namespace omni::dist
