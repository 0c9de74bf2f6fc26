#include "dist/topology.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"
#include "dist/mpi_check.h"

namespace omni::dist {

int Topology::nodes() const {
  int n = 0;
  for (int v : node_of) n = std::max(n, v + 1);
  return n;
}

std::vector<int> Topology::ranks_of(int node) const {
  std::vector<int> out;
  for (int r = 0; r < world_size(); ++r)
    if (node_of[static_cast<size_t>(r)] == node) out.push_back(r);
  return out;
}

Topology Topology::discover(const Communicator& world) {
  // The node: the ranks MPI says share memory with this one; named by its lowest world rank, so that every
  // rank numbers the nodes alike (by that rank, ascending).
  MPI_Comm shared = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(world.comm(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &shared));
  int leader = world.rank();
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared));
  MPI_CHECK(MPI_Comm_free(&shared));
  const std::vector<int> leaders = world.all_gather(leader);
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());

  std::array<char, 256> name{};
  if (::gethostname(name.data(), name.size() - 1) != 0) std::strcpy(name.data(), "?");
  name.back() = '\0';
  const std::vector<std::array<char, 256>> names = world.all_gather(name);

  Topology t;
  for (size_t r = 0; r < leaders.size(); ++r) {
    t.node_of.push_back(
        static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), leaders[r]) - distinct.begin()));
    t.hostnames.emplace_back(names[r].data());
  }
  return t;
}

Topology Topology::of_nodes(const std::vector<int>& node_of) {
  Topology t;
  t.node_of = node_of;
  for (int n : node_of) t.hostnames.push_back("node" + std::to_string(n));
  return t;
}

Placement Placement::identity(int world_size) {
  Placement p;
  for (int r = 0; r < world_size; ++r) {
    p.rank_at.push_back(r);
    p.position_of.push_back(r);
  }
  return p;
}

Placement place_by_node(const Topology& topology) {
  Placement p;
  for (int n = 0; n < topology.nodes(); ++n)
    for (int r : topology.ranks_of(n)) p.rank_at.push_back(r);
  p.position_of.assign(p.rank_at.size(), -1);
  for (size_t pos = 0; pos < p.rank_at.size(); ++pos) p.position_of[static_cast<size_t>(p.rank_at[pos])] = pos;
  return p;
}

namespace {

int largest_node(const Topology& t) {
  int most = 0;
  for (int n = 0; n < t.nodes(); ++n) most = std::max(most, static_cast<int>(t.ranks_of(n).size()));
  return most;
}

}  // namespace

namespace {

// The most nodes one group of `kind` (positions) spans.
int most_nodes(const dist::Layout& layout, const Topology& topology, const Placement& placement, GroupKind kind) {
  int most = 0;
  for (const auto& g : layout.groups(kind)) {
    std::set<int> nodes;
    for (int pos : g) nodes.insert(topology.node_of[static_cast<size_t>(placement.rank_at[static_cast<size_t>(pos)])]);
    most = std::max(most, static_cast<int>(nodes.size()));
  }
  return most;
}

}  // namespace

std::vector<GroupSpan> group_spans(const dist::Layout& layout, const Topology& topology, const Placement& placement) {
  OMNI_CHECK(topology.world_size() == layout.world_size && placement.rank_at.size() == topology.node_of.size(),
             "topology of ", topology.world_size(), " ranks for a layout of ", layout.world_size);
  const int per_node = largest_node(topology);
  std::vector<GroupSpan> out;
  // Each kind and the kind of its block (nullptr: the world, which may span every node).
  const std::pair<GroupKind, std::optional<GroupKind>> kinds[] = {
      {GroupKind::kShard, GroupKind::kShard}, {GroupKind::kUlysses, GroupKind::kUlysses},
      {GroupKind::kRing, GroupKind::kSp},     {GroupKind::kCfg, GroupKind::kVideo},
      {GroupKind::kDp, std::nullopt},         {GroupKind::kReplicate, std::nullopt}};
  for (const auto& [kind, block_kind] : kinds) {
    GroupSpan s;
    s.kind = kind;
    const auto groups = layout.groups(kind);
    s.groups = static_cast<int>(groups.size());
    s.size = static_cast<int>(groups.front().size());
    if (s.size <= 1) continue;
    s.max_nodes = most_nodes(layout, topology, placement, kind);
    if (block_kind) {
      s.block = static_cast<int>(layout.groups(*block_kind).front().size());
      s.block_nodes = most_nodes(layout, topology, placement, *block_kind);
      s.needed = (s.block + per_node - 1) / per_node;
    } else {
      s.block = layout.world_size;
      s.block_nodes = s.needed = topology.nodes();
    }
    out.push_back(s);
  }
  return out;
}

std::string crossing_message(const dist::Layout& layout, const Topology& topology, const Placement& placement) {
  std::vector<int> counts;
  for (int n = 0; n < topology.nodes(); ++n) counts.push_back(static_cast<int>(topology.ranks_of(n).size()));
  const bool equal = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts.front(); });
  const int per_node = largest_node(topology);
  std::ostringstream os;
  for (const GroupSpan& s : group_spans(layout, topology, placement)) {
    if (!s.crosses()) continue;
    os << (os.tellp() > 0 ? "; " : "") << name_of(s.kind) << " groups of " << s.size;
    if (s.block != s.size) os << " (in blocks of " << s.block << " ranks)";
    os << " span up to " << s.block_nodes << " nodes where " << s.needed << " would do";
  }
  if (os.tellp() == 0) return "";
  std::ostringstream line;
  line << "ranks are placed across nodes: " << os.str() << " (";
  if (equal) {
    line << topology.nodes() << " nodes x " << per_node << " ranks; a block stays inside a node when its size divides "
         << per_node << ", or spans whole nodes when it is a multiple of " << per_node << ")";
  } else {
    line << "unequal ranks per node:";
    for (int c : counts) line << " " << c;
    line << "; launch the same number of ranks on every node)";
  }
  return line.str();
}

std::string describe_nodes(const Topology& topology) {
  std::ostringstream os;
  os << topology.nodes() << (topology.nodes() == 1 ? " node: " : " nodes: ");
  for (int n = 0; n < topology.nodes(); ++n) {
    const auto ranks = topology.ranks_of(n);
    os << (n ? ", " : "") << topology.hostnames[static_cast<size_t>(ranks.front())] << " (ranks ";
    // Runs of consecutive ranks as a-b.
    for (size_t i = 0; i < ranks.size();) {
      size_t j = i;
      while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
      os << (i ? "," : "") << ranks[i];
      if (j > i) os << "-" << ranks[j];
      i = j + 1;
    }
    os << ")";
  }
  return os.str();
}

}  // namespace omni::dist
