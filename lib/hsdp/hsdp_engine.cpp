#include "hsdp/hsdp_engine.h"

#include <algorithm>

#include "core/error.h"
#include "core/timer.h"

namespace omni::hsdp {

ShardedModel::ShardedModel(std::string name, std::unique_ptr<FlatParamUnit> root,
                           std::vector<std::unique_ptr<FlatParamUnit>> blocks, std::shared_ptr<BufferPool> pool,
                           std::shared_ptr<HsdpStats> stats)
    : name_(std::move(name)),
      root_(std::move(root)),
      blocks_(std::move(blocks)),
      pool_(std::move(pool)),
      stats_(std::move(stats)),
      clock_(pool_ ? pool_->device() : at::Device(at::kCPU)) {
  OMNI_CHECK(root_ != nullptr, "sharded model ", name_, " has no root unit");
}

ShardedModel::~ShardedModel() {
  // Waiting on in-flight gathers before the buffers go away is required; errors here cannot propagate.
  try {
    release_all();
  } catch (...) {
  }
}

FlatParamUnit& ShardedModel::unit(int index) {
  if (index == -1) return *root_;
  OMNI_CHECK(index >= 0 && index < num_blocks(), name_, ": unit ", index, " out of range (", num_blocks(), " blocks)");
  return *blocks_[static_cast<size_t>(index)];
}

void ShardedModel::start(FlatParamUnit& u) {
  if (u.gathering() || u.gathered()) return;
  u.start_gather(*pool_);
  stats_->gathers += 1;
  stats_->received_bytes_total += u.received_bytes_per_gather();
  if (u.received_bytes_per_gather() > 0) {
    stats_->gathered_bytes_now += u.full_bytes();
    stats_->gathered_bytes_peak = std::max(stats_->gathered_bytes_peak, stats_->gathered_bytes_now);
  }
}

void ShardedModel::finish(FlatParamUnit& u) {
  if (u.gathered()) return;
  if (!u.gathering()) start(u);
  auto before = clock_.mark();
  u.finish_gather();
  waits_.emplace_back(std::move(before), clock_.mark());
  settle_waits(/*block=*/false);
}

void ShardedModel::settle_waits(bool block) {
  while (!waits_.empty() && (block || DeviceClock::reached(waits_.front().second))) {
    stats_->gather_wait_seconds += DeviceClock::seconds(waits_.front().first, waits_.front().second);
    waits_.pop_front();
  }
}

void ShardedModel::settle_timings() {
  settle_waits(/*block=*/true);
}

void ShardedModel::release(FlatParamUnit& u) {
  if (!u.gathered() && !u.gathering()) return;
  u.release(*pool_);
  if (u.received_bytes_per_gather() > 0) stats_->gathered_bytes_now -= u.full_bytes();
}

void ShardedModel::before(int index) {
  if (index == -1) {
    start(*root_);
    if (!blocks_.empty()) start(*blocks_[0]);  // prefetch: block 0's transfer overlaps the root's embeddings
    finish(*root_);
    return;
  }
  FlatParamUnit& u = unit(index);
  finish(u);
  if (index + 1 < num_blocks()) start(*blocks_[static_cast<size_t>(index + 1)]);  // overlaps block `index`
}

void ShardedModel::after(int index) {
  release(unit(index));
}

void ShardedModel::skip(int index) {
  FlatParamUnit& u = unit(index);
  if (u.gathering()) finish(u);
  release(u);
}

void ShardedModel::release_all() {
  for (auto& b : blocks_) release(*b);
  release(*root_);
}

int64_t ShardedModel::resident_bytes() const {
  int64_t b = root_->resident_bytes();
  for (const auto& u : blocks_) b += u->resident_bytes();
  return b;
}

int64_t ShardedModel::full_bytes() const {
  int64_t b = root_->full_bytes();
  for (const auto& u : blocks_) b += u->full_bytes();
  return b;
}

int64_t ShardedModel::received_bytes_per_forward() const {
  int64_t b = root_->received_bytes_per_gather();
  for (const auto& u : blocks_) b += u->received_bytes_per_gather();
  return b;
}

}  // namespace omni::hsdp
