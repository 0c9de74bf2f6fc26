#include "dist/process_group.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <numeric>

#include "core/dtype.h"
#include "core/error.h"
#include "core/text.h"
#include "dist/device_mesh.h"
#include "dist/process_group_mpi.h"
#ifdef OMNI_WITH_NCCL
#include "dist/process_group_nccl.h"
#endif

namespace omni::dist {
namespace {

bool supported_dtype(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kBFloat16:
    case at::kHalf:
    case at::kLong:
    case at::kInt:
    case at::kChar:
    case at::kByte:
    case at::kBool:
    case at::kFloat8_e4m3fn:  // moved as bytes (HSDP's float8 weights), never reduced
      return true;
    default:
      return false;
  }
}

int64_t sum_of(const std::vector<int64_t>& v) {
  return std::accumulate(v.begin(), v.end(), int64_t{0});
}

// True when the byte ranges of the two tensors intersect.
bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  if (a.numel() == 0 || b.numel() == 0) return false;
  auto pa = reinterpret_cast<uintptr_t>(a.data_ptr());
  auto pb = reinterpret_cast<uintptr_t>(b.data_ptr());
  auto ea = pa + a.numel() * a.element_size(), eb = pb + b.numel() * b.element_size();
  return pa < eb && pb < ea;
}

void check_counts(const std::vector<int64_t>& counts, int size, const char* op, const char* arg) {
  OMNI_CHECK(static_cast<int>(counts.size()) == size, op, ": ", arg, " has ", counts.size(), " entries for a group of ",
             size);
  for (size_t i = 0; i < counts.size(); ++i)
    OMNI_CHECK(counts[i] >= 0, op, ": ", arg, "[", i, "] is negative (", counts[i], ")");
}

}  // namespace

void wait_all(const std::vector<WorkHandle>& works) {
  for (const auto& w : works)
    if (w) w->wait();
}

std::vector<int64_t> exclusive_offsets(const std::vector<int64_t>& counts) {
  std::vector<int64_t> out(counts.size(), 0);
  for (size_t i = 1; i < counts.size(); ++i) out[i] = out[i - 1] + counts[i - 1];
  return out;
}

namespace {

// What one rank is about to issue, as the OMNI_DIST_DEBUG check exchanges it.
struct Fingerprint {
  uint64_t seq;
  int64_t count;
  int32_t op;  // index into kOps
  int32_t dtype;
};

const char* const kOps[] = {"all_gather_into_flat", "all_gather_v", "all_to_all", "all_to_all_v", "broadcast",
                            "all_reduce",           "barrier"};

int32_t op_index(const char* op) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (std::strcmp(kOps[i], op) == 0) return static_cast<int32_t>(i);
  OMNI_FAIL("unknown collective '", op, "'");
}

std::string describe(const Fingerprint& f) {
  std::string out = str_cat("#", f.seq, " ", kOps[f.op]);
  if (f.count >= 0) out += str_cat(" of ", f.count, " ", dtype_name(static_cast<at::ScalarType>(f.dtype)));
  return out;
}

bool debug_requested() {
  const char* v = std::getenv("OMNI_DIST_DEBUG");
  return v != nullptr && std::string(v) == "1";
}

}  // namespace

namespace {

std::mutex traffic_mutex;
TrafficByKind traffic_ledger{};  // guarded by traffic_mutex

// The ledger slot of a group's name: its GroupKind's, or -1 for a group of another name (not counted).
int kind_slot(const std::string& name) {
  for (size_t k = 0; k < kGroupKinds; ++k)
    if (name == name_of(group_kinds()[k])) return static_cast<int>(k);
  return -1;
}

}  // namespace

TrafficByKind traffic_totals() {
  std::lock_guard<std::mutex> lock(traffic_mutex);
  return traffic_ledger;
}

void ProcessGroup::set_peer_nodes(const std::vector<int>& node_of_group_rank) {
  OMNI_CHECK(static_cast<int>(node_of_group_rank.size()) == size_, "set_peer_nodes: ", node_of_group_rank.size(),
             " nodes for a group of ", size_);
  peer_nodes_ = node_of_group_rank;
}

template <typename BytesTo>
void ProcessGroup::count_traffic(BytesTo bytes_to) {
  if (kind_slot_ < 0) return;
  TrafficCounts add;
  add.collectives = 1;
  for (int j = 0; j < size_; ++j) {
    if (j == rank_) continue;
    const bool local =
        peer_nodes_.empty() || peer_nodes_[static_cast<size_t>(j)] == peer_nodes_[static_cast<size_t>(rank_)];
    (local ? add.intra_node_bytes : add.inter_node_bytes) += static_cast<int64_t>(bytes_to(j));
  }
  std::lock_guard<std::mutex> lock(traffic_mutex);
  TrafficCounts& t = traffic_ledger[static_cast<size_t>(kind_slot_)];
  t.intra_node_bytes += add.intra_node_bytes;
  t.inter_node_bytes += add.inter_node_bytes;
  t.collectives += add.collectives;
}

ProcessGroup::ProcessGroup(const Communicator& comm, const std::string& name)
    : rank_(comm.rank()), size_(comm.size()), kind_slot_(kind_slot(name)) {
  const auto members = comm.world_ranks();
  label_ = (name.empty() ? std::string("a") : name) + " group (world ranks ";
  for (size_t i = 0; i < members.size(); ++i) label_ += (i ? "," : "") + std::to_string(members[i]);
  label_ += ")";
  // Agreed, so that a variable set on some ranks only (mpirun without -x) still checks on all of them.
  std::vector<int> debug{debug_requested() ? 1 : 0};
  comm.all_reduce_max(debug);
  if (debug[0] != 0) debug_ = comm.dup();
}

void ProcessGroup::begin(const char* op, int64_t count, at::ScalarType dtype) {
  ++seq_;
  if (!debug_.valid()) return;
  const Fingerprint mine{seq_, count, op_index(op), static_cast<int32_t>(dtype)};
  const std::vector<Fingerprint> all = debug_.all_gather(mine);
  for (int r = 1; r < size_; ++r) {
    const Fingerprint& f = all[static_cast<size_t>(r)];
    if (f.seq == all[0].seq && f.op == all[0].op && f.count == all[0].count && f.dtype == all[0].dtype) continue;
    OMNI_FAIL("collective desync on the ", label_, ": group rank 0 issues ", describe(all[0]), " but group rank ", r,
              " issues ", describe(f), " (OMNI_DIST_DEBUG)");
  }
}

void ProcessGroup::check_tensor(const at::Tensor& t, const char* op, const char* arg) const {
  OMNI_CHECK(t.defined(), op, ": ", arg, " is undefined");
  OMNI_CHECK(t.device() == device(), op, ": ", arg, " is on ", t.device(), " but the ", backend_name(),
             " group works on ", device());
  OMNI_CHECK(t.is_contiguous(), op, ": ", arg, " must be contiguous (shape ", t.sizes(), ", strides ", t.strides(),
             ")");
  OMNI_CHECK(supported_dtype(t.scalar_type()), op, ": ", arg, " has unsupported dtype ", t.scalar_type());
}

WorkHandle ProcessGroup::all_gather_into_flat(const at::Tensor& output, const at::Tensor& input) {
  check_tensor(output, "all_gather_into_flat", "output");
  check_tensor(input, "all_gather_into_flat", "input");
  OMNI_CHECK(output.scalar_type() == input.scalar_type(), "all_gather_into_flat: output is ", output.scalar_type(),
             " but input is ", input.scalar_type());
  OMNI_CHECK(output.numel() == input.numel() * size_, "all_gather_into_flat: output has ", output.numel(),
             " elements, expected input's ", input.numel(), " x group size ", size_);
  if (overlaps(output, input)) {
    const auto own = static_cast<char*>(output.data_ptr()) + rank_ * input.numel() * input.element_size();
    OMNI_CHECK(input.data_ptr() == own, "all_gather_into_flat: input overlaps output but is not output's slice ",
               "for rank ", rank_);
  }
  begin("all_gather_into_flat", output.numel(), output.scalar_type());
  count_traffic([&](int) { return input.nbytes(); });
  return do_all_gather(output, input);
}

WorkHandle ProcessGroup::all_gather_v(const at::Tensor& output, const at::Tensor& input,
                                      const std::vector<int64_t>& counts) {
  check_tensor(output, "all_gather_v", "output");
  check_tensor(input, "all_gather_v", "input");
  check_counts(counts, size_, "all_gather_v", "counts");
  OMNI_CHECK(output.scalar_type() == input.scalar_type(), "all_gather_v: output is ", output.scalar_type(),
             " but input is ", input.scalar_type());
  OMNI_CHECK(input.numel() == counts[rank_], "all_gather_v: input has ", input.numel(), " elements but counts[", rank_,
             "] = ", counts[rank_]);
  OMNI_CHECK(output.numel() == sum_of(counts), "all_gather_v: output has ", output.numel(),
             " elements but the counts sum to ", sum_of(counts));
  OMNI_CHECK(!overlaps(output, input), "all_gather_v: input and output overlap");
  begin("all_gather_v", output.numel(), output.scalar_type());
  count_traffic([&](int) { return input.nbytes(); });
  return do_all_gather_v(output, input, counts);
}

WorkHandle ProcessGroup::all_to_all(const at::Tensor& output, const at::Tensor& input) {
  check_tensor(output, "all_to_all", "output");
  check_tensor(input, "all_to_all", "input");
  OMNI_CHECK(output.scalar_type() == input.scalar_type(), "all_to_all: output is ", output.scalar_type(),
             " but input is ", input.scalar_type());
  OMNI_CHECK(output.numel() == input.numel() && input.numel() % size_ == 0, "all_to_all: input has ", input.numel(),
             " and output ", output.numel(), " elements; both must be the same multiple of the group size ", size_);
  OMNI_CHECK(!overlaps(output, input), "all_to_all: input and output overlap (in place is not supported)");
  begin("all_to_all", output.numel(), output.scalar_type());
  count_traffic([&](int) { return input.nbytes() / size_; });
  return do_all_to_all(output, input);
}

WorkHandle ProcessGroup::all_to_all_v(const at::Tensor& output, const at::Tensor& input,
                                      const std::vector<int64_t>& send_counts,
                                      const std::vector<int64_t>& recv_counts) {
  check_tensor(output, "all_to_all_v", "output");
  check_tensor(input, "all_to_all_v", "input");
  check_counts(send_counts, size_, "all_to_all_v", "send_counts");
  check_counts(recv_counts, size_, "all_to_all_v", "recv_counts");
  OMNI_CHECK(output.scalar_type() == input.scalar_type(), "all_to_all_v: output is ", output.scalar_type(),
             " but input is ", input.scalar_type());
  OMNI_CHECK(input.numel() == sum_of(send_counts), "all_to_all_v: input has ", input.numel(),
             " elements but send_counts sum to ", sum_of(send_counts));
  OMNI_CHECK(output.numel() == sum_of(recv_counts), "all_to_all_v: output has ", output.numel(),
             " elements but recv_counts sum to ", sum_of(recv_counts));
  OMNI_CHECK(!overlaps(output, input), "all_to_all_v: input and output overlap (in place is not supported)");
  begin("all_to_all_v", -1, output.scalar_type());
  count_traffic([&](int j) { return send_counts[static_cast<size_t>(j)] * input.element_size(); });
  return do_all_to_all_v(output, input, send_counts, recv_counts);
}

WorkHandle ProcessGroup::broadcast(const at::Tensor& tensor, int root) {
  check_tensor(tensor, "broadcast", "tensor");
  OMNI_CHECK(root >= 0 && root < size_, "broadcast: root ", root, " is outside the group of ", size_);
  begin("broadcast", tensor.numel(), tensor.scalar_type());
  count_traffic([&](int) { return rank_ == root ? tensor.nbytes() : size_t{0}; });
  return do_broadcast(tensor, root);
}

WorkHandle ProcessGroup::all_reduce(const at::Tensor& tensor, ReduceOp op) {
  check_tensor(tensor, "all_reduce", "tensor");
  OMNI_CHECK(tensor.scalar_type() != at::kBool && tensor.scalar_type() != at::kFloat8_e4m3fn,
             "all_reduce: ", tensor.scalar_type(), " tensors cannot be reduced");
  begin("all_reduce", tensor.numel(), tensor.scalar_type());
  count_traffic([&](int) { return 2 * tensor.nbytes() / size_; });
  return do_all_reduce(tensor, op);
}

WorkHandle ProcessGroup::barrier() {
  begin("barrier", 0, at::kByte);
  return do_barrier();
}

std::unique_ptr<ProcessGroup> make_process_group(const Communicator& comm, at::Device device, const std::string& name) {
  OMNI_CHECK(comm.valid(), "make_process_group: null communicator");
  if (device.is_cpu()) return std::make_unique<ProcessGroupMpi>(comm, name);
  if (device.is_cuda()) {
#ifdef OMNI_WITH_NCCL
    return std::make_unique<ProcessGroupNccl>(comm, device, name);
#else
    OMNI_FAIL_USAGE("--device ", device, " needs the NCCL backend, but this build has none (configure with NCCL ",
                    "and CUDA present, or -DOMNI_WITH_NCCL=ON); use --device cpu");
#endif
  }
  OMNI_FAIL_USAGE("--device ", device, ": no communication backend for this device type (expected cpu or cuda)");
}

DeviceGroups::DeviceGroups(const DeviceMesh& mesh, at::Device device, const std::vector<GroupKind>& kinds) {
  for (GroupKind kind : group_kinds()) {
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) continue;
    const Communicator& comm = mesh.group(kind);
    if (comm.size() == 1) continue;  // nothing to exchange
    auto group = std::shared_ptr<ProcessGroup>(make_process_group(comm, device, name_of(kind)));
    std::vector<int> nodes;
    for (int r : mesh.group_ranks(kind)) nodes.push_back(mesh.topology().node_of[static_cast<size_t>(r)]);
    group->set_peer_nodes(nodes);
    groups_[static_cast<size_t>(kind)] = std::move(group);
  }
  // Each communicator used once, in series and in the same kind order on every rank, before any overlaps
  // another: a communicator's first collective sets it up, which must not race another's (NCCL).
  for (const auto& group : groups_)
    if (group) group->barrier()->synchronize();
}

}  // namespace omni::dist
