// ProcessGroup: the collectives HSDP and sequence parallelism need, over at::Tensor, each returning a Work
// handle so that communication overlaps computation (docs/DESIGN.md section 4; PyTorch c10d's shape).
//
// Backends: ProcessGroupMpi (CPU tensors, non-blocking MPI) and ProcessGroupNccl (CUDA tensors, only with
// OMNI_WITH_NCCL). make_process_group() picks one from the device.
//
// Rules every call follows:
// - Collective: every rank of the group issues the same calls in the same order, with matching sizes.
// - Tensors are contiguous, on the group's device, of one dtype per call; they are read as flat element
//   arrays whatever their shape. Supported dtypes: float32, float64, bfloat16, float16, int64, int32, int8,
//   uint8, bool and float8_e4m3fn (moved as bytes; neither bool nor float8 in all_reduce). Violations throw an internal
//   error naming the call and argument.
// - Until the Work completes, inputs must not be written and outputs not read; the Work keeps the tensors
//   alive, so dropping a handle early never frees memory under a transfer (the destructor waits).
// - Every collective gets the group's next sequence number (1, 2, ...), which the watchdog's line names with
//   the op. With OMNI_DIST_DEBUG=1 (on any rank of the group) the ranks first exchange each collective's
//   fingerprint {number, op, element count, dtype} on the host and fail with one line naming the ranks and
//   what each issued when they differ (a desync), instead of waiting for a timeout or exchanging garbage.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/parallel_config.h"

namespace omni::dist {

class Work {
 public:
  virtual ~Work() = default;
  // Makes the result usable by whatever runs next on this rank: MPI blocks until the transfer is done;
  // NCCL makes the compute stream wait for it (the host does not block). Idempotent.
  virtual void wait() = 0;
  // Non-blocking poll; also drives progress of MPI's non-blocking collectives.
  virtual bool is_completed() = 0;
  // Blocks the host until the result is in memory (NCCL: the device finished the transfer).
  virtual void synchronize() { wait(); }
};
using WorkHandle = std::shared_ptr<Work>;

// Bytes this rank sent through the collectives of one group kind, split by where the peer runs: on this rank's
// node (NVLink, shared memory) or on another (the network). Counted by a direct-exchange model, the same for
// every backend: an all-gather sends this rank's input to each peer, an all-to-all its chunk j to peer j, a
// broadcast the tensor from the root to each peer, an all-reduce 2 x bytes / size to each peer (a ring
// all-reduce's total of 2 (n - 1) / n x bytes).
struct TrafficCounts {
  int64_t intra_node_bytes = 0;
  int64_t inter_node_bytes = 0;
  int64_t collectives = 0;
};
// This process's totals so far, per group kind (the groups named by name_of(GroupKind); groups of other names
// are not counted).
using TrafficByKind = std::array<TrafficCounts, kGroupKinds>;
TrafficByKind traffic_totals();

// Waits on each handle in order.
void wait_all(const std::vector<WorkHandle>& works);

enum class ReduceOp { kSum, kMax };

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  ProcessGroup(const ProcessGroup&) = delete;
  ProcessGroup& operator=(const ProcessGroup&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // "shard group (world ranks 0,1,2,3)", for messages.
  const std::string& label() const { return label_; }
  // Collectives issued so far on this group (the last one's sequence number).
  uint64_t sequence() const { return seq_; }
  virtual at::Device device() const = 0;
  virtual const char* backend_name() const = 0;

  // The HSDP gather: `input` holds n elements, `output` n * size(); rank r's input lands at [r*n, (r+1)*n).
  // `input` may be exactly output's own slice (in place), otherwise the two must not overlap.
  WorkHandle all_gather_into_flat(const at::Tensor& output, const at::Tensor& input);
  // Variable sizes: rank r contributes counts[r] elements; output holds sum(counts), in rank order.
  WorkHandle all_gather_v(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& counts);
  // Equal splits: input and output hold size() * c elements; input chunk j goes to rank j and output chunk
  // j comes from rank j.
  WorkHandle all_to_all(const at::Tensor& output, const at::Tensor& input);
  // Variable splits, in elements: send_counts[j] consecutive elements of input (in rank order) go to
  // rank j; recv_counts[j] elements from rank j land consecutively in output. Every rank's send_counts[j]
  // must equal rank j's recv_counts[this rank].
  WorkHandle all_to_all_v(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& send_counts,
                          const std::vector<int64_t>& recv_counts);
  WorkHandle broadcast(const at::Tensor& tensor, int root);
  // In place. bfloat16 and float16 are reduced in float32 on MPI (one rounding at the end).
  WorkHandle all_reduce(const at::Tensor& tensor, ReduceOp op = ReduceOp::kSum);
  WorkHandle barrier();

  // Per group rank, the node it runs on (dist::Topology's numbering); this rank's entry is its own node. Only
  // the traffic counts use it. Default: every peer on this rank's node.
  void set_peer_nodes(const std::vector<int>& node_of_group_rank);

 protected:
  // Collective over `comm` (agrees whether the OMNI_DIST_DEBUG check runs). `name` ("shard", "ulysses", ...)
  // names the group in messages.
  ProcessGroup(const Communicator& comm, const std::string& name);

  virtual WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input) = 0;
  virtual WorkHandle do_all_gather_v(const at::Tensor& output, const at::Tensor& input,
                                     const std::vector<int64_t>& counts) = 0;
  virtual WorkHandle do_all_to_all(const at::Tensor& output, const at::Tensor& input) = 0;
  virtual WorkHandle do_all_to_all_v(const at::Tensor& output, const at::Tensor& input,
                                     const std::vector<int64_t>& send_counts,
                                     const std::vector<int64_t>& recv_counts) = 0;
  virtual WorkHandle do_broadcast(const at::Tensor& tensor, int root) = 0;
  virtual WorkHandle do_all_reduce(const at::Tensor& tensor, ReduceOp op) = 0;
  virtual WorkHandle do_barrier() = 0;

 private:
  void check_tensor(const at::Tensor& t, const char* op, const char* arg) const;
  // Numbers the collective about to be issued and, in debug mode, checks that every rank issues the same one.
  // `count` is an element count every rank must agree on (-1: none, for all_to_all_v's per-rank splits).
  void begin(const char* op, int64_t count, at::ScalarType dtype);
  // Adds bytes_to(j) for every peer j to the traffic of this group's kind (none for a group of another name).
  template <typename BytesTo>
  void count_traffic(BytesTo bytes_to);

  int rank_;
  int size_;
  std::string label_;
  int kind_slot_;                // index of this group's GroupKind in the traffic ledger, -1: not a kind (not counted)
  std::vector<int> peer_nodes_;  // empty: all on this node
  uint64_t seq_ = 0;
  Communicator debug_;  // valid in debug mode: the host channel of the fingerprints
};

// Collective over `comm`: an MPI group for a CPU device, an NCCL group for a CUDA device (needs a build with
// OMNI_WITH_NCCL; otherwise a usage error naming --device). The group keeps its own duplicate of `comm`.
// `name` ("shard", "ulysses", ...) names the group in errors and the watchdog's lines.
std::unique_ptr<ProcessGroup> make_process_group(const Communicator& comm, at::Device device,
                                                 const std::string& name = "");

class DeviceMesh;

// A mesh's device process groups, made once per run (by the pipeline, from the mesh and the device its rank
// selected) so that every consumer (HSDP, sequence parallelism, CFG, the VAE bands, the step cache) shares
// them. Only the kinds asked for are made, each once, in GroupKind order on every rank; a group of one
// rank gets none (nothing to exchange).
class DeviceGroups {
 public:
  DeviceGroups() = default;
  // Collective over the mesh's world: every rank passes the same `kinds`.
  DeviceGroups(const DeviceMesh& mesh, at::Device device, const std::vector<GroupKind>& kinds);
  // The group of `kind`; null when it has one rank or was not asked for.
  std::shared_ptr<ProcessGroup> get(GroupKind kind) const { return groups_[static_cast<size_t>(kind)]; }

 private:
  std::array<std::shared_ptr<ProcessGroup>, kGroupKinds> groups_;  // by GroupKind
};

// Element offsets of consecutive blocks: {0, c0, c0+c1, ...} (size counts.size()).
std::vector<int64_t> exclusive_offsets(const std::vector<int64_t>& counts);

}  // namespace omni::dist
