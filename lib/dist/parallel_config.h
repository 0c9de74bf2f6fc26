// ParallelConfig validation and the rank layout (docs/DESIGN.md section 4). Pure integer logic: every rank
// computes the same verdict from the same inputs, so no rank waits on one that already exited.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace omni::dist {

// The kinds of rank groups a layout makes, in the order the mesh splits them (DeviceMesh): "dp" the data-parallel
// axis (one rank of each video group), "cfg", "ring", "ulysses", "sp" (ring x ulysses), "shard" and "replicate"
// (HSDP), "video" (the cfg x ring x ulysses ranks that make one video together: a data-parallel group).
enum class GroupKind { kDp, kCfg, kRing, kUlysses, kSp, kShard, kReplicate, kVideo };
constexpr size_t kGroupKinds = 8;
// Every kind, in that order.
const std::array<GroupKind, kGroupKinds>& group_kinds();
// The one name table: "dp", "cfg", ... (logs, the report's keys, process-group names).
const char* name_of(GroupKind kind);
// The kind of that name (the same table); an internal error for any other name.
GroupKind group_kind(const std::string& name);

struct ParallelConfig {
  int ulysses_degree = 1;
  int ring_degree = 1;
  int cfg_parallel_size = 1;
  int tensor_parallel_size = 1;
  bool use_hsdp = false;
  int hsdp_shard_size = -1;      // -1: not given / automatic
  int hsdp_replicate_size = -1;  // -1: not given (1)
  // Groups that should stay inside a node (shard, ulysses, ring, cfg) and cannot on this launch's nodes are an
  // error instead of a warning (dist/topology.h).
  bool strict_topology = false;
};

// Compute: W = dp x cfg x ring x ulysses, ulysses innermost (contiguous ranks), dp outermost:
//   rank = ((dp_i * cfg + cfg_i) * ring + ring_i) * ulysses + ulysses_i.
// Weights (HSDP): W = replicate x shard; shard groups are contiguous blocks, replicate groups strided.
struct Layout {
  int world_size = 1;
  int dp = 1, cfg = 1, ring = 1, ulysses = 1;
  bool use_hsdp = false;
  int hsdp_shard = 1, hsdp_replicate = 1;  // without HSDP: shard 1 (every rank holds whole models)

  int sp() const { return ring * ulysses; }
  int video_size() const { return cfg * ring * ulysses; }  // ranks per data-parallel ("video") group
  // HSDP shard groups (contiguous blocks of hsdp_shard ranks) span several data-parallel groups: every block's
  // gather is a collective of those groups, which so make the same transformer calls (lockstep).
  bool groups_share_shards() const { return dp > 1 && use_hsdp && hsdp_shard > video_size(); }
  // Coordinates of `rank` on each axis.
  int dp_index(int rank) const { return rank / video_size(); }
  int cfg_index(int rank) const { return (rank / (ring * ulysses)) % cfg; }
  int ring_index(int rank) const { return (rank / ulysses) % ring; }
  int ulysses_index(int rank) const { return rank % ulysses; }
  int shard_index(int rank) const { return rank % hsdp_shard; }
  int replicate_index(int rank) const { return rank / hsdp_shard; }

  // The rank that writes the videos of its "video" group (gets the frames, writes the MP4 and the sidecar):
  // the group's first, cfg, ring and ulysses index 0. The one place that says so.
  bool writes_video(int rank) const {
    return cfg_index(rank) == 0 && ring_index(rank) == 0 && ulysses_index(rank) == 0;
  }

  // All groups of one kind, each a sorted list of layout positions.
  std::vector<std::vector<int>> groups(GroupKind kind) const;
  // The group of `kind` that contains `rank`.
  std::vector<int> group_of(GroupKind kind, int rank) const;
  // One line: "world 4: dp 4 x cfg 1 x ring 1 x ulysses 1; hsdp replicate 1 x shard 4".
  std::string summary() const;
};

// What an automatic layout is chosen for.
struct LayoutWork {
  int videos = 1;          // videos in this run (the prompt list's length)
  bool guidance = false;   // classifier-free guidance runs for some video (guidance scale above 1)
  int heads = 1;           // the transformer's attention heads (Ulysses splits them)
  int64_t min_tokens = 1;  // the smallest video's transformer tokens (sequence parallelism splits them)
  // Ranks per node when there are several (the greatest common divisor of the nodes' rank counts); 0: one node.
  // Ulysses' all-to-alls then stay inside a node and the ring (overlapped point-to-point) crosses nodes.
  int node_ranks = 0;
};

// The compute degrees for `world` ranks chosen from `work` (--layout auto): one video per data-parallel group
// while videos remain to fill the groups (dp: a divisor of the world not above the video count, the one with
// the fewest group-rounds ceil(videos / dp) x dp, so that no group idles in a last round, then the largest);
// then cfg 2 when guidance runs; then Ulysses up to the largest degree that divides the heads (and, on several
// nodes, the ranks per node: its groups are innermost, so they stay inside a node); ring for the rest. A degree is
// never above the tokens it splits; what no degree can use becomes more data-parallel groups. The HSDP fields of
// `given` are kept (its automatic shard size follows the chosen degrees). `reason` gets one line: "auto: 1 video on 4
// ranks: cfg 2 x ulysses 2; 40 heads".
ParallelConfig choose_parallel(const ParallelConfig& given, int world, const LayoutWork& work, std::string* reason);

// Validates `pc` for `world_size` ranks and resolves the layout; throws a usage error (exit 2) whose one
// line names the flags and numbers involved.
Layout resolve_layout(const ParallelConfig& pc, int world_size);

}  // namespace omni::dist
