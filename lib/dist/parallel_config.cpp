#include "dist/parallel_config.h"

#include <algorithm>
#include <sstream>

#include "core/error.h"

namespace omni::dist {

ParallelConfig choose_parallel(const ParallelConfig& given, int world, const LayoutWork& work, std::string* reason) {
  OMNI_CHECK(world >= 1 && work.heads >= 1, "choose_parallel: world ", world, ", heads ", work.heads);
  // The largest divisor of n that is at most `limit` and satisfies `ok`.
  auto largest_divisor = [](int n, int64_t limit, auto ok) {
    int best = 1;
    for (int d = 1; d <= n; ++d)
      if (n % d == 0 && d <= limit && ok(d)) best = d;
    return best;
  };
  const auto any = [](int) { return true; };
  ParallelConfig pc = given;
  // Data-parallel groups: the fewest group-rounds (ceil(videos / dp) rounds of dp groups: a group without a
  // video in the last round repeats one for nothing), then the most groups (data parallelism scales perfectly,
  // splitting one video does not). 8 videos on 4 ranks: dp 4; 3 videos: dp 1 (3 rounds of one video on all
  // ranks rather than 2 rounds of 2 groups, one idle in the second).
  const int videos = std::max(work.videos, 1);
  int dp = 1;
  for (int d = 1; d <= world; ++d) {
    if (world % d != 0 || d > videos) continue;
    const int64_t slots = static_cast<int64_t>((videos + d - 1) / d) * d, best = (videos + dp - 1) / dp * dp;
    if (slots <= best) dp = d;
  }
  int rest = world / dp;
  pc.cfg_parallel_size = work.guidance && rest % 2 == 0 ? 2 : 1;
  rest /= pc.cfg_parallel_size;
  const int64_t tokens = std::max<int64_t>(work.min_tokens, 1);
  const bool nodes = work.node_ranks > 0 && work.node_ranks < world;
  pc.ulysses_degree =
      largest_divisor(rest, tokens, [&](int u) { return work.heads % u == 0 && (!nodes || work.node_ranks % u == 0); });
  rest /= pc.ulysses_degree;
  pc.ring_degree = largest_divisor(rest, tokens / pc.ulysses_degree, any);
  dp *= rest / pc.ring_degree;  // ranks no degree could use: more groups (repeating videos) rather than none

  if (reason != nullptr) {
    std::string parts;
    auto add = [&](const char* name, int v) {
      if (v > 1) parts += (parts.empty() ? "" : " x ") + std::string(name) + " " + std::to_string(v);
    };
    add("dp", dp);
    add("cfg", pc.cfg_parallel_size);
    add("ulysses", pc.ulysses_degree);
    add("ring", pc.ring_degree);
    *reason = str_cat("auto: ", work.videos, work.videos == 1 ? " video" : " videos", " on ", world,
                      world == 1 ? " rank: " : " ranks: ", parts.empty() ? "one rank" : parts, "; ", work.heads,
                      " heads", work.guidance ? "" : ", no guidance",
                      nodes ? str_cat("; Ulysses inside a node of ", work.node_ranks, " ranks") : "");
  }
  return pc;
}

Layout resolve_layout(const ParallelConfig& pc, int world) {
  OMNI_CHECK(world >= 1, "world size must be positive, got ", world);
  // Tensor parallelism first: with HSDP it is a contradiction, without it simply unsupported.
  if (pc.tensor_parallel_size != 1) {
    OMNI_CHECK_USAGE(!pc.use_hsdp,
                     "HSDP and tensor parallelism are mutually exclusive; tensor parallel size must be 1 "
                     "(got --tensor-parallel-size ",
                     pc.tensor_parallel_size, " with --use-hsdp)");
    OMNI_FAIL_USAGE(
        "tensor parallelism is not supported (use HSDP with sequence parallelism): got "
        "--tensor-parallel-size ",
        pc.tensor_parallel_size);
  }
  OMNI_CHECK_USAGE(pc.cfg_parallel_size == 1 || pc.cfg_parallel_size == 2,
                   "cfg parallel size must be 1 or 2: got --cfg-parallel-size ", pc.cfg_parallel_size);
  OMNI_CHECK_USAGE(pc.ulysses_degree >= 1, "--ulysses-degree must be at least 1, got ", pc.ulysses_degree);
  OMNI_CHECK_USAGE(pc.ring_degree >= 1, "--ring-degree must be at least 1, got ", pc.ring_degree);

  Layout l;
  l.world_size = world;
  l.ulysses = pc.ulysses_degree;
  l.ring = pc.ring_degree;
  l.cfg = pc.cfg_parallel_size;
  const int product = l.ulysses * l.ring * l.cfg;
  OMNI_CHECK_USAGE(world % product == 0, "the product of parallel degrees (", product, " = ulysses ", l.ulysses,
                   " x ring ", l.ring, " x cfg ", l.cfg, ") must divide world size ", world);
  l.dp = world / product;

  if (!pc.use_hsdp) {
    l.hsdp_shard = 1;  // every rank holds whole models: each rank is its own shard group
    l.hsdp_replicate = world;
    OMNI_CHECK_USAGE(pc.hsdp_shard_size == -1, "--hsdp-shard-size needs --use-hsdp (got --hsdp-shard-size ",
                     pc.hsdp_shard_size, " without it)");
    OMNI_CHECK_USAGE(pc.hsdp_replicate_size == -1,
                     "--hsdp-replicate-size needs --use-hsdp (got "
                     "--hsdp-replicate-size ",
                     pc.hsdp_replicate_size, " without it)");
    return l;
  }

  l.use_hsdp = true;
  const int replicate = pc.hsdp_replicate_size == -1 ? 1 : pc.hsdp_replicate_size;
  OMNI_CHECK_USAGE(replicate >= 1, "--hsdp-replicate-size must be at least 1, got ", replicate);
  if (pc.hsdp_shard_size == -1) {
    // Automatic shard size exists only alongside other parallelism (vllm-omni's rule).
    OMNI_CHECK_USAGE(product > 1,
                     "standalone HSDP needs an explicit --hsdp-shard-size (no --ulysses-degree, "
                     "--ring-degree or --cfg-parallel-size above 1 to derive it from); for example "
                     "--hsdp-shard-size ",
                     world / replicate);
    OMNI_CHECK_USAGE(world % replicate == 0, "--hsdp-replicate-size: replicate ", replicate, " must divide world size ",
                     world, " to choose the shard size automatically");
    l.hsdp_replicate = replicate;
    l.hsdp_shard = world / replicate;
  } else {
    OMNI_CHECK_USAGE(pc.hsdp_shard_size >= 1, "--hsdp-shard-size must be at least 1 (or -1 for automatic), got ",
                     pc.hsdp_shard_size);
    OMNI_CHECK_USAGE(replicate * pc.hsdp_shard_size == world, "--hsdp-replicate-size x --hsdp-shard-size: replicate ",
                     replicate, " x shard ", pc.hsdp_shard_size, " = ", replicate * pc.hsdp_shard_size,
                     " does not equal world size ", world);
    l.hsdp_replicate = replicate;
    l.hsdp_shard = pc.hsdp_shard_size;
  }
  return l;
}

const std::array<GroupKind, kGroupKinds>& group_kinds() {
  static const std::array<GroupKind, kGroupKinds> k = {GroupKind::kDp,        GroupKind::kCfg,  GroupKind::kRing,
                                                       GroupKind::kUlysses,   GroupKind::kSp,   GroupKind::kShard,
                                                       GroupKind::kReplicate, GroupKind::kVideo};
  return k;
}

const char* name_of(GroupKind kind) {
  switch (kind) {
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kCfg:
      return "cfg";
    case GroupKind::kRing:
      return "ring";
    case GroupKind::kUlysses:
      return "ulysses";
    case GroupKind::kSp:
      return "sp";
    case GroupKind::kShard:
      return "shard";
    case GroupKind::kReplicate:
      return "replicate";
    case GroupKind::kVideo:
      return "video";
  }
  OMNI_FAIL("a group kind outside the table");
}

GroupKind group_kind(const std::string& name) {
  for (GroupKind k : group_kinds())
    if (name == name_of(k)) return k;
  OMNI_FAIL("unknown group kind '", name, "'");
}

std::vector<std::vector<int>> Layout::groups(GroupKind kind) const {
  std::vector<std::vector<int>> out;
  // Groups are built by fixing every coordinate except the axis (or axes) of `kind`.
  auto key_of = [&](int r) -> int {
    switch (kind) {
      case GroupKind::kDp:
        return r % video_size();
      case GroupKind::kCfg:
        return dp_index(r) * ring * ulysses + ring_index(r) * ulysses + ulysses_index(r);
      case GroupKind::kRing:
        return (dp_index(r) * cfg + cfg_index(r)) * ulysses + ulysses_index(r);
      case GroupKind::kUlysses:
        return r / ulysses;
      case GroupKind::kSp:
        return r / (ring * ulysses);
      case GroupKind::kShard:
        return replicate_index(r);
      case GroupKind::kReplicate:
        return shard_index(r);
      case GroupKind::kVideo:
        return dp_index(r);
    }
    OMNI_FAIL("a group kind outside the table");
  };
  std::vector<int> keys;
  for (int r = 0; r < world_size; ++r) {
    int k = key_of(r);
    size_t slot = 0;
    for (; slot < keys.size(); ++slot)
      if (keys[slot] == k) break;
    if (slot == keys.size()) {
      keys.push_back(k);
      out.emplace_back();
    }
    out[slot].push_back(r);
  }
  return out;
}

std::vector<int> Layout::group_of(GroupKind kind, int rank) const {
  for (auto& g : groups(kind))
    for (int r : g)
      if (r == rank) return g;
  OMNI_FAIL("rank ", rank, " is outside world size ", world_size);
}

std::string Layout::summary() const {
  std::ostringstream os;
  os << "world " << world_size << ": dp " << dp << " x cfg " << cfg << " x ring " << ring << " x ulysses " << ulysses;
  if (use_hsdp)
    os << "; hsdp replicate " << hsdp_replicate << " x shard " << hsdp_shard;
  else
    os << "; hsdp off (every rank holds whole models)";
  return os.str();
}

}  // namespace omni::dist
