// Multi-rank test of lib/dist under mpirun (1, 2 and 4 ranks): the Communicator, the DeviceMesh's groups and
// every ProcessGroup collective, nccl-tests style -- each rank computes the expected buffer independently from
// the same closed-form pattern and the result must match it exactly (max abs error 0; the patterns are exact
// in bfloat16 and their sums too). Every rank runs the same checks in the same order; each check's error is
// all-reduced (max) so a failure on any rank fails it everywhere, and rank 0 prints one line per check and
// "N passed, N failed". A thrown error aborts all ranks instead of leaving them waiting.
#include <ATen/ATen.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/timer.h"
#include "dist/communicator.h"
#include "dist/device_mesh.h"
#include "dist/parallel_config.h"
#include "dist/process_group.h"
#include "mpi_check.h"
#include "tensor_check.h"

namespace {

using omni::dist::Communicator;
using omni::dist::DeviceMesh;
using omni::dist::ProcessGroup;
using omni::dist::ReduceOp;
using omni::dist::WorkHandle;

omni::test_util::MpiChecks g_checks;  // the pass/fail table (tests/common/mpi_check.h)
int g_world_rank = 0;

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "f32";
    case at::kBFloat16:
      return "bf16";
    case at::kHalf:
      return "f16";
    case at::kLong:
      return "i64";
    case at::kInt:
      return "i32";
    case at::kByte:
      return "u8";
    default:
      return "?";
  }
}

// The value rank `src` sends towards `dst` at element index `offset + k`, as dtype `t`. Integers 0..48 mixed
// by a hash; floats are (raw - 24) / 2 + 0.25, exact in bfloat16 and so are sums of four; int64 adds
// src * 2^40 to exercise the high bits; uint8 keeps raw so that sums of four stay below 256.
at::Tensor pattern(at::ScalarType t, int src, int dst, int64_t n, int64_t offset = 0) {
  at::Tensor k = at::arange(offset, offset + n, at::kLong);
  at::Tensor raw = (k * 7 + (src * 131 + dst * 71)).remainder(49);
  switch (t) {
    case at::kFloat:
    case at::kBFloat16:
    case at::kHalf:
      return ((raw.to(at::kDouble) - 24) * 0.5 + 0.25).to(t);
    case at::kLong:
      return raw - 24 + static_cast<int64_t>(src) * (int64_t{1} << 40);
    case at::kInt:
      return ((raw - 24) * 1000 + src).to(at::kInt);
    case at::kByte:
      return raw.to(at::kByte);
    default:
      OMNI_FAIL("no pattern for ", t);
  }
}

// The collectives return flat buffers: compared element by element whatever the shapes.
double max_err(const at::Tensor& got, const at::Tensor& want) {
  if (got.numel() != want.numel()) return 1e30;
  return omni::test_util::max_abs_err(got.reshape({-1}), want.reshape({-1}));
}

// Runs every collective on `pg`, whose group rank i is world rank members[i]. Patterns use world ranks, so
// data that crossed into the wrong group would not match.
void run_collectives(ProcessGroup& pg, const std::vector<int>& members, const std::string& label,
                     const std::vector<at::ScalarType>& dtypes) {
  const int g = pg.size(), me = pg.rank();
  const int wme = members[me];
  g_checks.truth(label + " rank/size match the member list",
                 g == static_cast<int>(members.size()) && wme == g_world_rank);
  for (at::ScalarType t : dtypes) {
    const std::string tag = label + " " + dtype_name(t);
    auto opts = at::TensorOptions().dtype(t);

    // HSDP gather: a flat parameter of N elements (not a multiple of g), padded with zeros to a multiple.
    for (int64_t N : {int64_t{1}, int64_t{1003}, int64_t{65537}}) {
      const int64_t shard = (N + g - 1) / g, padded = shard * g;
      at::Tensor full = at::zeros({padded}, opts);
      full.narrow(0, 0, N).copy_(pattern(t, 0, 0, N));
      at::Tensor out = at::full({padded}, 7, opts);
      pg.all_gather_into_flat(out, full.narrow(0, me * shard, shard).clone())->wait();
      g_checks.err(tag + " all_gather_into_flat N=" + std::to_string(N), max_err(out, full));
      // In place: this rank's shard already sits in its slice of the output.
      at::Tensor out2 = at::full({padded}, 7, opts);
      out2.narrow(0, me * shard, shard).copy_(full.narrow(0, me * shard, shard));
      pg.all_gather_into_flat(out2, out2.narrow(0, me * shard, shard))->wait();
      g_checks.err(tag + " all_gather_into_flat in-place N=" + std::to_string(N), max_err(out2, full));
    }

    // Variable sizes, one rank contributing nothing when g > 1.
    {
      std::vector<int64_t> counts(g);
      for (int r = 0; r < g; ++r) counts[r] = (g > 1 && r == 1) ? 0 : 5 + 3 * r;
      std::vector<at::Tensor> parts;
      for (int r = 0; r < g; ++r) parts.push_back(pattern(t, members[r], 0, counts[r]));
      at::Tensor out = at::full({omni::dist::exclusive_offsets(counts).back() + counts.back()}, 7, opts);
      pg.all_gather_v(out, pattern(t, wme, 0, counts[me]), counts)->wait();
      g_checks.err(tag + " all_gather_v", max_err(out, at::cat(parts)));
    }

    // All-to-all, equal splits of 7 elements per peer.
    {
      const int64_t c = 7;
      std::vector<at::Tensor> send, want;
      for (int j = 0; j < g; ++j) send.push_back(pattern(t, wme, members[j], c));
      for (int j = 0; j < g; ++j) want.push_back(pattern(t, members[j], wme, c));
      at::Tensor out = at::full({g * c}, 7, opts);
      pg.all_to_all(out, at::cat(send))->wait();
      g_checks.err(tag + " all_to_all", max_err(out, at::cat(want)));
    }

    // All-to-all with uneven splits (a sequence of 13 + rank tokens cut unevenly), zeros included.
    {
      auto count = [&](int src, int dst) -> int64_t { return (src * 3 + dst * 2) % 5; };
      std::vector<int64_t> sc(g), rc(g);
      std::vector<at::Tensor> send, want;
      for (int j = 0; j < g; ++j) {
        sc[j] = count(me, j);
        rc[j] = count(j, me);
        send.push_back(pattern(t, wme, members[j], sc[j], 100));
        want.push_back(pattern(t, members[j], wme, rc[j], 100));
      }
      at::Tensor out = at::full({at::cat(want).numel()}, 7, opts);
      pg.all_to_all_v(out, at::cat(send), sc, rc)->wait();
      g_checks.err(tag + " all_to_all_v", max_err(out, at::cat(want)));
    }

    // Broadcast from every root.
    for (int root = 0; root < g; ++root) {
      at::Tensor buf = me == root ? pattern(t, members[root], 1, 513) : at::full({513}, 7, opts);
      pg.broadcast(buf, root)->wait();
      g_checks.err(tag + " broadcast root=" + std::to_string(root), max_err(buf, pattern(t, members[root], 1, 513)));
    }

    // All-reduce sum and max; the expected value sums the members' patterns in double.
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
      const int64_t n = 1001;
      at::Tensor want = pattern(t, members[0], 2, n).to(at::kDouble);
      for (int r = 1; r < g; ++r) {
        at::Tensor v = pattern(t, members[r], 2, n).to(at::kDouble);
        want = op == ReduceOp::kSum ? want + v : at::maximum(want, v);
      }
      at::Tensor buf = pattern(t, wme, 2, n);
      pg.all_reduce(buf, op)->wait();
      g_checks.err(tag + (op == ReduceOp::kSum ? " all_reduce sum" : " all_reduce max"), max_err(buf, want));
    }
  }

  // Overlap: two collectives in flight at once, polled, then waited in reverse order of issue.
  {
    const int64_t n = 4099;
    at::Tensor gathered = at::zeros({n * g}, at::kFloat);
    at::Tensor summed = pattern(at::kFloat, wme, 3, n);
    WorkHandle a = pg.all_gather_into_flat(gathered, pattern(at::kFloat, wme, 4, n));
    WorkHandle b = pg.all_reduce(summed, ReduceOp::kSum);
    for (int spin = 0; spin < 100 && !(a->is_completed() && b->is_completed()); ++spin) {
    }
    b->wait();
    a->wait();
    std::vector<at::Tensor> parts;
    at::Tensor want_sum = at::zeros({n}, at::kDouble);
    for (int r = 0; r < g; ++r) {
      parts.push_back(pattern(at::kFloat, members[r], 4, n));
      want_sum += pattern(at::kFloat, members[r], 3, n).to(at::kDouble);
    }
    g_checks.err(label + " overlapped all_gather", max_err(gathered, at::cat(parts)));
    g_checks.err(label + " overlapped all_reduce", max_err(summed, want_sum));
    g_checks.truth(label + " overlapped works report completion", a->is_completed() && b->is_completed());
    // A dropped handle still completes (its destructor waits), so the result is there afterwards.
    at::Tensor dropped = pattern(at::kBFloat16, wme, 5, 17);
    pg.all_reduce(dropped, ReduceOp::kMax);
    at::Tensor want_max = pattern(at::kBFloat16, members[0], 5, 17).to(at::kDouble);
    for (int r = 1; r < g; ++r)
      want_max = at::maximum(want_max, pattern(at::kBFloat16, members[r], 5, 17).to(at::kDouble));
    g_checks.err(label + " dropped work completes", max_err(dropped, want_max));
  }
  // is_completed() is a real poll and barrier() really waits: group rank 0 joins 200 ms late, so no other
  // rank can see its all_reduce complete before then, nor leave the barrier earlier.
  if (g > 1) {
    at::Tensor x = pattern(at::kFloat, wme, 6, 33);
    if (pg.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    WorkHandle w = pg.all_reduce(x, ReduceOp::kSum);
    const bool early = pg.rank() != 0 && w->is_completed();
    w->wait();
    g_checks.truth(label + " is_completed() is false while a peer has not joined", !early);
    g_checks.truth(label + " is_completed() after wait()", w->is_completed());
    omni::Timer t;
    if (pg.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pg.barrier()->wait();
    const double waited = t.seconds();
    g_checks.truth(label + " barrier holds every rank until the last one joins", pg.rank() == 0 || waited >= 0.15,
                   "left after " + std::to_string(waited) + " s");
  }
}

bool throws(const std::function<void()>& f) {
  try {
    f();
  } catch (const omni::Error&) {
    return true;
  }
  return false;
}

void test_argument_checks(ProcessGroup& pg) {
  const int g = pg.size();
  at::Tensor in = at::zeros({10}, at::kFloat);
  g_checks.truth("checks: gather output of the wrong size throws",
                 throws([&] { pg.all_gather_into_flat(at::zeros({10 * g + 1}, at::kFloat), in); }));
  g_checks.truth("checks: gather of mixed dtypes throws",
                 throws([&] { pg.all_gather_into_flat(at::zeros({10 * g}, at::kBFloat16), in); }));
  g_checks.truth("checks: non-contiguous tensor throws", throws([&] {
                   pg.broadcast(at::zeros({4, 4}, at::kFloat).t(), 0);
                 }));
  g_checks.truth("checks: unsupported dtype throws",
                 throws([&] { pg.broadcast(at::zeros({4}, at::kComplexFloat), 0); }));
  g_checks.truth("checks: all_to_all_v counts not summing to the input throw", throws([&] {
                   pg.all_to_all_v(in, in.clone(), std::vector<int64_t>(g, 11), std::vector<int64_t>(g, 11));
                 }));
  g_checks.truth("checks: broadcast root outside the group throws", throws([&] { pg.broadcast(in, g); }));
#ifndef OMNI_WITH_NCCL
  g_checks.truth("checks: a CUDA device in a build without NCCL is a usage error", [&] {
    try {
      omni::dist::make_process_group(Communicator::world(), at::Device(at::kCUDA, 0));
    } catch (const omni::Error& e) {
      return e.code() == omni::ExitCode::kUsage;
    }
    return false;
  }());
#endif
}

void test_communicator() {
  Communicator world = Communicator::world();
  int wsize = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  g_checks.truth("communicator: world rank/size", world.rank() == g_world_rank && world.size() == wsize);
  // Split into even and odd world ranks, ordered by descending rank.
  Communicator parity = world.split(g_world_rank % 2, -g_world_rank);
  std::vector<int> want;
  for (int r = wsize - 1; r >= 0; --r)
    if (r % 2 == g_world_rank % 2) want.push_back(r);
  g_checks.truth("communicator: split by parity, key reverses order", parity.world_ranks() == want);
  Communicator none = world.split(-1, 0);
  g_checks.truth("communicator: negative color gives a null communicator", !none.valid());
  Communicator copy = parity.dup();
  g_checks.truth("communicator: dup keeps ranks", copy.world_ranks() == want && copy.comm() != parity.comm());
  Communicator moved(std::move(copy));
  g_checks.truth("communicator: move leaves the source null", !copy.valid() && moved.world_ranks() == want);
  moved.barrier();
  omni::dist::MpiEnvironment nested;
  g_checks.truth("communicator: a second environment does not own MPI", !nested.owns_mpi());
}

struct MeshCase {
  omni::dist::ParallelConfig pc;
  std::string name;
};

void test_mesh(const MeshCase& mc, int wsize) {
  const auto layout = omni::dist::resolve_layout(mc.pc, wsize);
  DeviceMesh mesh(layout, Communicator::world());
  const std::string label = "mesh[" + mc.name + "]";
  for (const char* kind : {"dp", "cfg", "ring", "ulysses", "sp", "shard", "replicate", "video"}) {
    const auto& comm = mesh.group(omni::dist::group_kind(kind));
    const auto expected = layout.group_of(omni::dist::group_kind(kind), g_world_rank);
    g_checks.truth(label + " " + kind + " communicator members",
                   comm.world_ranks() == expected && mesh.group_ranks(omni::dist::group_kind(kind)) == expected);
  }
  // Collectives on the groups the HSDP engine and sequence parallelism use.
  for (const char* kind : {"shard", "replicate", "ulysses", "cfg"}) {
    auto pg = omni::dist::make_process_group(mesh.group(omni::dist::group_kind(kind)), at::Device(at::kCPU));
    run_collectives(*pg, mesh.group_ranks(omni::dist::group_kind(kind)), label + " " + kind,
                    {at::kFloat, at::kBFloat16});
  }
}

// Sequence numbers, and OMNI_DIST_DEBUG's desync check: set on the last rank only (the group agrees to check),
// matching collectives pass; a mismatched all_reduce (rank 0 sends 4 elements, the others 3) fails on every
// rank before any data moves, with one line naming the collective's number, the ranks and what each issued.
void test_desync_check(int wsize) {
  const bool last = g_world_rank == wsize - 1;
  if (last) setenv("OMNI_DIST_DEBUG", "1", 1);
  auto pg = omni::dist::make_process_group(Communicator::world(), at::Device(at::kCPU), "desync-test");
  if (last) unsetenv("OMNI_DIST_DEBUG");
  g_checks.truth("group label", pg->label().rfind("desync-test group (world ranks 0", 0) == 0, pg->label());
  at::Tensor t = at::ones({4});
  pg->all_reduce(t)->wait();
  pg->barrier()->wait();
  g_checks.truth("matching collectives pass the check, numbered", pg->sequence() == 2 && t[0].item<float>() == wsize);
  if (wsize < 2) return;
  std::string message;
  try {
    at::Tensor mine = at::ones({g_world_rank == 0 ? 4 : 3});
    pg->all_reduce(mine)->wait();
  } catch (const omni::Error& e) {
    message = e.what();
  }
  const bool named = message.find("collective desync on the desync-test group") != std::string::npos &&
                     message.find("group rank 0 issues #3 all_reduce of 4 float32") != std::string::npos &&
                     message.find("group rank 1 issues #3 all_reduce of 3 float32") != std::string::npos;
  g_checks.truth("a desync is one error on every rank naming both sides", named, message);
  // Without the check, sequence numbers still count.
  auto plain = omni::dist::make_process_group(Communicator::world(), at::Device(at::kCPU), "plain");
  at::Tensor u = at::ones({2});
  for (int i = 0; i < 3; ++i) plain->all_reduce(u)->wait();
  g_checks.truth("sequence numbers without the check", plain->sequence() == 3);
}

int run_all() {
  int wsize = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &wsize);
  test_communicator();

  std::vector<int> world_members(wsize);
  for (int r = 0; r < wsize; ++r) world_members[r] = r;
  auto world_pg = omni::dist::make_process_group(Communicator::world(), at::Device(at::kCPU));
  g_checks.truth("world group is the mpi backend", std::string(world_pg->backend_name()) == "mpi");
  run_collectives(*world_pg, world_members, "world",
                  {at::kFloat, at::kBFloat16, at::kLong, at::kHalf, at::kInt, at::kByte});
  test_argument_checks(*world_pg);
  test_desync_check(wsize);

  // The 4-rank layout, checked against hand-written groups as well as against Layout::group_of.
  std::vector<MeshCase> cases;
  auto add = [&](std::string name, int uly, int ring, int cfg, bool hsdp, int shard, int rep) {
    omni::dist::ParallelConfig pc;
    pc.ulysses_degree = uly;
    pc.ring_degree = ring;
    pc.cfg_parallel_size = cfg;
    pc.use_hsdp = hsdp;
    pc.hsdp_shard_size = shard;
    pc.hsdp_replicate_size = rep;
    cases.push_back({pc, std::move(name)});
  };
  if (wsize == 1) add("hsdp 1", 1, 1, 1, true, 1, -1);
  if (wsize == 2) {
    add("ulysses 2 hsdp shard 2", 2, 1, 1, true, -1, -1);
    add("cfg 2 hsdp replicate 2 x shard 1", 1, 1, 2, true, 1, 2);
  }
  if (wsize == 4) {
    add("ulysses 2 x cfg 2, hsdp replicate 2 x shard 2", 2, 1, 2, true, 2, 2);
    add("dp 2 x ulysses 2, hsdp shard 4", 2, 1, 1, true, 4, 1);
  }
  for (const auto& mc : cases) test_mesh(mc, wsize);
  if (wsize == 4) {
    const auto layout = omni::dist::resolve_layout(cases[0].pc, 4);
    DeviceMesh mesh(layout, Communicator::world());
    const int r = g_world_rank;
    g_checks.truth(
        "mesh[ulysses 2 x cfg 2] hand-written groups",
        mesh.group_ranks(omni::dist::group_kind("ulysses")) == std::vector<int>{r / 2 * 2, r / 2 * 2 + 1} &&
            mesh.group_ranks(omni::dist::group_kind("cfg")) == std::vector<int>{r % 2, r % 2 + 2} &&
            mesh.group_ranks(omni::dist::group_kind("shard")) == std::vector<int>{r / 2 * 2, r / 2 * 2 + 1} &&
            mesh.group_ranks(omni::dist::group_kind("replicate")) == std::vector<int>{r % 2, r % 2 + 2} &&
            mesh.group_ranks(omni::dist::group_kind("dp")) == std::vector<int>{r} &&
            mesh.group_ranks(omni::dist::group_kind("ring")) == std::vector<int>{r});
  }

  // Two nodes simulated on this host as mpirun --map-by node lays them out (world ranks 0, 2 on node 0; 1, 3 on
  // node 1), ulysses 2 x cfg 2 with HSDP replicate 2 x shard 2: the placement puts the layout's positions 0, 1
  // on ranks 0, 2 and positions 2, 3 on ranks 1, 3, so the shard and Ulysses groups are each node's two ranks
  // and the CFG and replicate groups pair the nodes. Collectives still give the right buffers in that order, and
  // the traffic counts put the shard gather's bytes inside the node and the replicate group's across.
  if (wsize == 4) {
    const auto layout = omni::dist::resolve_layout(cases[0].pc, 4);
    const auto topology = omni::dist::Topology::of_nodes({0, 1, 0, 1});
    DeviceMesh mesh(layout, Communicator::world(), topology);
    const int r = g_world_rank;
    const std::vector<int> node_ranks = r % 2 == 0 ? std::vector<int>{0, 2} : std::vector<int>{1, 3};
    const std::vector<int> pair = r < 2 ? std::vector<int>{0, 1} : std::vector<int>{2, 3};
    g_checks.truth("mesh[by node] position", mesh.position() == (r % 2) * 2 + r / 2);
    g_checks.truth("mesh[by node] shard and ulysses groups are the node's ranks",
                   mesh.group_ranks(omni::dist::group_kind("shard")) == node_ranks &&
                       mesh.group_ranks(omni::dist::group_kind("ulysses")) == node_ranks &&
                       mesh.group(omni::dist::group_kind("shard")).world_ranks() == node_ranks);
    g_checks.truth("mesh[by node] cfg and replicate groups pair the nodes",
                   mesh.group_ranks(omni::dist::group_kind("cfg")) == pair &&
                       mesh.group_ranks(omni::dist::group_kind("replicate")) == pair &&
                       mesh.group(omni::dist::group_kind("cfg")).world_ranks() == pair);
    for (const char* kind : {"shard", "cfg"}) {
      auto pg = omni::dist::make_process_group(mesh.group(omni::dist::group_kind(kind)), at::Device(at::kCPU), kind);
      run_collectives(*pg, mesh.group_ranks(omni::dist::group_kind(kind)), std::string("mesh[by node] ") + kind,
                      {at::kFloat});
    }
    // The traffic of one 1,000-float gather on each group, counted as DeviceGroups counts it.
    const auto before = omni::dist::traffic_totals();
    using omni::dist::GroupKind;
    omni::dist::DeviceGroups groups(mesh, at::Device(at::kCPU), {GroupKind::kShard, GroupKind::kReplicate});
    // Each communicator used once as it is made (a barrier, in kind order), so that no communicator's first
    // collective, which sets NCCL's connections up, overlaps another's (issue 38, 7).
    for (const GroupKind kind : {GroupKind::kShard, GroupKind::kReplicate}) {
      g_checks.truth(std::string("groups[by node] ") + omni::dist::name_of(kind) + ": one warm-up collective when made",
                     groups.get(kind)->sequence() == 1);
    }
    for (const GroupKind kind : {GroupKind::kShard, GroupKind::kReplicate}) {
      at::Tensor out = at::zeros({2000}, at::kFloat);
      groups.get(kind)->all_gather_into_flat(out, at::ones({1000}, at::kFloat))->wait();
    }
    const auto after = omni::dist::traffic_totals();
    auto delta = [&](GroupKind kind) {
      const size_t k = static_cast<size_t>(kind);
      omni::dist::TrafficCounts d = after[k];
      d.intra_node_bytes -= before[k].intra_node_bytes;
      d.inter_node_bytes -= before[k].inter_node_bytes;
      return d;
    };
    g_checks.truth("traffic[by node] shard gather: 4000 bytes to the node's other rank, none across",
                   delta(GroupKind::kShard).intra_node_bytes == 4000 && delta(GroupKind::kShard).inter_node_bytes == 0);
    g_checks.truth(
        "traffic[by node] replicate gather: 4000 bytes across the nodes, none inside",
        delta(GroupKind::kReplicate).intra_node_bytes == 0 && delta(GroupKind::kReplicate).inter_node_bytes == 4000);
  }

  // A larger gather (4 MiB of float32 per rank), the size class of a transformer block's shard.
  {
    const int64_t n = (1 << 20) + 3;
    at::Tensor out = at::zeros({n * wsize}, at::kFloat);
    world_pg->all_gather_into_flat(out, pattern(at::kFloat, g_world_rank, 9, n))->wait();
    std::vector<at::Tensor> parts;
    for (int r = 0; r < wsize; ++r) parts.push_back(pattern(at::kFloat, r, 9, n));
    g_checks.err("world f32 all_gather_into_flat 4 MiB per rank", max_err(out, at::cat(parts)));
  }

  return g_checks.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "collectives_test", run_all);
}
