// The HSDP schedule of one sharded model: a root unit held gathered for a whole forward, and blocks gathered
// one at a time with the next block's gather issued before the current block computes (docs/DESIGN.md section 4).
//
//   before(root): gather root, prefetch block 0      before(i): wait block i, prefetch block i+1
//   after(i):     release block i                    after(root): release root
//
// So at most the root and two blocks are gathered at once. Every rank of a shard group must call before/after
// in the same order (same steps, same experts): the gathers are collectives.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "core/device_clock.h"
#include "hsdp/flat_param.h"

namespace omni::hsdp {

// Per-rank accounting, shared by every sharded model of a run (the field names of the --report JSON).
struct HsdpStats {
  int64_t param_bytes_resident = 0;  // this rank's slices of every unit
  int64_t gathered_bytes_now = 0;    // full buffers currently gathered or in flight
  int64_t gathered_bytes_peak = 0;
  int64_t received_bytes_total = 0;  // bytes received from other ranks by all gathers so far
  int64_t gathers = 0;
  // Time compute waited for gathers: host time blocked in finish_gather on the CPU; on a GPU, the compute
  // stream's stall on the gather's event (CUDA events around the wait), read once the device got there.
  double gather_wait_seconds = 0.0;
  int64_t disk_bytes_read = 0;  // bytes read from checkpoints for the shards
  // Weights held in float8: read as the checkpoint stores them, or quantized at load (--weight-dtype).
  int64_t float8_weights_stored = 0;
  int64_t float8_weights_quantized = 0;
};

class ShardedModel {
 public:
  ShardedModel(std::string name, std::unique_ptr<FlatParamUnit> root,
               std::vector<std::unique_ptr<FlatParamUnit>> blocks, std::shared_ptr<BufferPool> pool,
               std::shared_ptr<HsdpStats> stats);
  ~ShardedModel();

  const std::string& name() const { return name_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  FlatParamUnit& unit(int index);  // -1: root

  // The UnitHooks contract (lib/models/module.h): kRootUnit is -1.
  void before(int unit);
  void after(int unit);
  // Releases everything still gathered (an aborted forward).
  void release_all();
  // Unit `unit` will not run this forward (the step cache skips the blocks): its prefetch, if started, is
  // completed (every rank of the shard group started it) and released.
  void skip(int unit);
  // Adds the gather waits still being timed on the device to the stats (blocks until the device reached
  // them). Call after a forward when the figures are read; the denoising loop itself never blocks on them.
  void settle_timings();

  int64_t resident_bytes() const;
  int64_t full_bytes() const;                  // all units, gathered size (padded)
  int64_t received_bytes_per_forward() const;  // what one forward gathers from the other ranks

 private:
  void start(FlatParamUnit& u);
  void finish(FlatParamUnit& u);
  void release(FlatParamUnit& u);

  std::string name_;
  std::unique_ptr<FlatParamUnit> root_;
  std::vector<std::unique_ptr<FlatParamUnit>> blocks_;
  std::shared_ptr<BufferPool> pool_;
  std::shared_ptr<HsdpStats> stats_;
  DeviceClock clock_;
  std::deque<std::pair<DeviceClock::MarkPtr, DeviceClock::MarkPtr>> waits_;  // being timed on the device
  void settle_waits(bool block);
};

}  // namespace omni::hsdp
