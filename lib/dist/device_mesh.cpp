#include "dist/device_mesh.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace omni::dist {

const std::array<const char*, 8>& DeviceMesh::kinds() {
  static const std::array<const char*, 8> k = {"dp", "cfg", "ring", "ulysses", "sp", "shard", "replicate", "video"};
  return k;
}

DeviceMesh::DeviceMesh(const config::Layout& layout, const Communicator& world) : layout_(layout) {
  OMNI_CHECK(world.valid(), "DeviceMesh needs a valid world communicator");
  OMNI_CHECK(world.size() == layout.world_size, "the layout was resolved for ", layout.world_size,
             " ranks but the communicator has ", world.size(), " (", layout.summary(), ")");
  world_ = world.dup();
  const int me = world_.rank();
  for (size_t k = 0; k < kinds().size(); ++k) {
    const auto groups = layout_.groups(kinds()[k]);
    // Color: the index of the group holding this rank; key: its position in that (sorted) group, so
    // the new communicator's rank order is the group's list order.
    int color = -1, key = -1;
    for (size_t g = 0; g < groups.size() && color < 0; ++g) {
      auto it = std::find(groups[g].begin(), groups[g].end(), me);
      if (it != groups[g].end()) {
        color = static_cast<int>(g);
        key = static_cast<int>(it - groups[g].begin());
      }
    }
    OMNI_CHECK(color >= 0, "rank ", me, " is in no '", kinds()[k], "' group of ", layout_.summary());
    ranks_[k] = groups[color];
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
  os << "rank " << rank() << ":";
  for (size_t k = 0; k < kinds().size(); ++k) {
    os << " " << kinds()[k] << " [";
    for (size_t i = 0; i < ranks_[k].size(); ++i) os << (i ? " " : "") << ranks_[k][i];
    os << "]";
  }
  return os.str();
}

}  // namespace omni::dist
