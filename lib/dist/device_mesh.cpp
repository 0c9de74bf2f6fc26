#include "dist/device_mesh.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace omni::dist {

int DeviceMesh::PlacedGroups::max_nodes() const {
  return nodes.empty() ? 0 : *std::max_element(nodes.begin(), nodes.end());
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
  for (size_t k = 0; k < kGroupKinds; ++k) {
    const GroupKind kind = group_kinds()[k];
    const auto groups = layout_.groups(kind);  // positions
    PlacedGroups& placed = placed_[k];
    for (const auto& g : groups) {
      std::vector<int> ranks;
      std::set<int> nodes;
      for (int pos : g) {
        ranks.push_back(placement_.rank_at[static_cast<size_t>(pos)]);
        nodes.insert(topology_.node_of[static_cast<size_t>(ranks.back())]);
      }
      placed.ranks.push_back(std::move(ranks));
      placed.nodes.push_back(static_cast<int>(nodes.size()));
    }
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
    OMNI_CHECK(color >= 0, "rank ", rank(), " (position ", me, ") is in no '", name_of(kind), "' group of ",
               layout_.summary());
    ranks_[k].clear();
    for (int pos : groups[static_cast<size_t>(color)])
      ranks_[k].push_back(placement_.rank_at[static_cast<size_t>(pos)]);
    groups_[k] = world_.split(color, key);
    OMNI_CHECK(groups_[k].size() == static_cast<int>(ranks_[k].size()) && groups_[k].rank() == key, "split of '",
               name_of(kind), "' gave size ", groups_[k].size(), " rank ", groups_[k].rank(), ", expected size ",
               ranks_[k].size(), " rank ", key);
  }
}

std::string DeviceMesh::describe() const {
  std::ostringstream os;
  os << "rank " << rank() << " (position " << position() << ", " << topology_.hostnames[static_cast<size_t>(rank())]
     << "):";
  for (size_t k = 0; k < kGroupKinds; ++k) {
    os << " " << name_of(group_kinds()[k]) << " [";
    for (size_t i = 0; i < ranks_[k].size(); ++i) os << (i ? " " : "") << ranks_[k][i];
    os << "]";
  }
  return os.str();
}

}  // namespace omni::dist
