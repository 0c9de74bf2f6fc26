// Helpers shared by the HSDP tests: the rank-0 check table (tests/common/mpi_check.h), a ProcessGroup
// decorator that counts what the engine really hands to MPI (independent of HsdpStats' own arithmetic), a
// UnitHooks wrapper that checks the prefetch order as the forward runs, and the layouts the tests sweep.
#pragma once

#include <ATen/ATen.h>
#include <mpi.h>

#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/parallel_config.h"
#include "dist/process_group.h"
#include "hsdp/hsdp_engine.h"
#include "models/module.h"
#include "mpi_check.h"
#include "tensor_check.h"

namespace hsdp_test {

// Pass/fail table printed by world rank 0 (tests/common/mpi_check.h).
using Checks = omni::test_util::MpiChecks;

using omni::test_util::max_abs_err;

// Forwards every collective to `inner` and records the all-gathers: how many, the bytes of their outputs and
// the bytes this rank received (output - own input), so the tests can compare the engine's accounting with
// what was actually transferred, and the hooks wrapper can tell which gathers a hook issued.
class CountingGroup : public omni::dist::ProcessGroup {
 public:
  // `comm` is the communicator `inner` was made from.
  CountingGroup(const omni::dist::Communicator& comm, std::unique_ptr<omni::dist::ProcessGroup> inner)
      : ProcessGroup(comm, "counting"), inner_(std::move(inner)) {}
  at::Device device() const override { return inner_->device(); }
  const char* backend_name() const override { return inner_->backend_name(); }

  int64_t gathers = 0;
  int64_t gathered_output_bytes = 0;
  int64_t received_bytes = 0;

 protected:
  using WorkHandle = omni::dist::WorkHandle;
  WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input) override {
    ++gathers;
    gathered_output_bytes += output.nbytes();
    received_bytes += output.nbytes() - input.nbytes();
    return inner_->all_gather_into_flat(output, input);
  }
  WorkHandle do_all_gather_v(const at::Tensor& output, const at::Tensor& input,
                             const std::vector<int64_t>& counts) override {
    return inner_->all_gather_v(output, input, counts);
  }
  WorkHandle do_all_to_all(const at::Tensor& output, const at::Tensor& input) override {
    return inner_->all_to_all(output, input);
  }
  WorkHandle do_all_to_all_v(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& send,
                             const std::vector<int64_t>& recv) override {
    return inner_->all_to_all_v(output, input, send, recv);
  }
  WorkHandle do_broadcast(const at::Tensor& tensor, int root) override { return inner_->broadcast(tensor, root); }
  WorkHandle do_all_reduce(const at::Tensor& tensor, omni::dist::ReduceOp op) override {
    return inner_->all_reduce(tensor, op);
  }
  WorkHandle do_barrier() override { return inner_->barrier(); }

 private:
  std::unique_ptr<omni::dist::ProcessGroup> inner_;
};

// Wraps the engine's hooks and checks, at every hook, the schedule docs/DESIGN.md section 4 promises:
//   before(root) issues the gathers of the root and block 0 (and nothing else) and leaves the root gathered;
//   before(i) leaves block i gathered and has issued block i+1's gather (still in flight: it overlaps block
//   i's compute), with block i+2 untouched; after(i) issues nothing and leaves block i released.
// `group` is the CountingGroup the model was sharded over (null for shard 1: then no gathers exist and only
// the states are checked). Violations are collected as text; `events` is the hook order seen.
class RecordingHooks : public omni::models::UnitHooks {
 public:
  RecordingHooks(omni::hsdp::ShardedModel* model, CountingGroup* group) : model_(model), group_(group) {}

  void before(int unit) override {
    events.push_back("before(" + std::to_string(unit) + ")");
    const int64_t g0 = group_ ? group_->gathered_output_bytes : 0;
    model_->before(unit);
    const int64_t issued = group_ ? group_->gathered_output_bytes - g0 : 0;
    const int n = model_->num_blocks();
    auto& self = model_->unit(unit);
    if (!self.gathered()) fail("unit " + std::to_string(unit) + " not gathered after before()");
    const int next = unit + 1;  // root: block 0
    int64_t expect_issued = 0;
    if (unit == omni::models::UnitHooks::kRootUnit) expect_issued += full_if_sharded(self);
    if (next < n) {
      auto& nu = model_->unit(next);
      // Sharded: the gather must be in flight while this unit computes. Shard 1 keeps the same state
      // machine (the "gather" is the slice itself), so gathering() holds there too.
      if (!nu.gathering())
        fail("block " + std::to_string(next) + " not prefetched by before(" + std::to_string(unit) + ")");
      expect_issued += full_if_sharded(nu);
    }
    if (next + 1 < n && (model_->unit(next + 1).gathering() || model_->unit(next + 1).gathered()))
      fail("block " + std::to_string(next + 1) + " gathered too early, in before(" + std::to_string(unit) + ")");
    if (group_ && issued != expect_issued)
      fail("before(" + std::to_string(unit) + ") issued gathers of " + std::to_string(issued) + " bytes, expected " +
           std::to_string(expect_issued));
    // What is resident now: at most the root and two blocks (this one and the prefetched one).
    int live_blocks = 0;
    for (int i = 0; i < n; ++i) live_blocks += model_->unit(i).gathered() || model_->unit(i).gathering();
    if (live_blocks > 2) fail(std::to_string(live_blocks) + " blocks live in before(" + std::to_string(unit) + ")");
  }

  void after(int unit) override {
    events.push_back("after(" + std::to_string(unit) + ")");
    const int64_t g0 = group_ ? group_->gathers : 0;
    model_->after(unit);
    if (group_ && group_->gathers != g0) fail("after(" + std::to_string(unit) + ") issued a gather");
    if (model_->unit(unit).gathered() || model_->unit(unit).gathering())
      fail("unit " + std::to_string(unit) + " still held after after()");
  }

  std::vector<std::string> events;
  std::vector<std::string> failures;

 private:
  int64_t full_if_sharded(omni::hsdp::FlatParamUnit& u) const {
    return u.received_bytes_per_gather() > 0 ? u.full_bytes() : 0;
  }
  void fail(const std::string& what) { failures.push_back(what); }

  omni::hsdp::ShardedModel* model_;
  CountingGroup* group_;
};

// The HSDP layouts a world of `world` ranks is tested with: (replicate, shard).
inline std::vector<std::pair<int, int>> test_layouts(int world) {
  if (world == 4) return {{1, 4}, {2, 2}};
  return {{1, world}};
}

inline omni::dist::Layout hsdp_layout(int replicate, int shard, int world) {
  omni::dist::ParallelConfig pc;
  pc.use_hsdp = true;
  pc.hsdp_shard_size = shard;
  pc.hsdp_replicate_size = replicate;
  return omni::dist::resolve_layout(pc, world);
}

inline std::string layout_name(int replicate, int shard) {
  return "rep" + std::to_string(replicate) + "xshard" + std::to_string(shard);
}

}  // namespace hsdp_test
