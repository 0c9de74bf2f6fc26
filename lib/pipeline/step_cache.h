// Step caching (docs/DESIGN.md section 10): a transformer call whose input has barely changed since the last
// computed step of the same expert and CFG branch reuses that step's residual instead of running the blocks.
//
//   teacache  TeaCache (ali-vilab): the relative L1 change of the timestep modulation (the blocks' e0 input)
//             since the previous step, rescaled by TeaCache's fitted polynomial for Wan and accumulated over
//             the skipped steps; skip while the sum is under the threshold. x += cached (out - in) of all blocks.
//   fbcache   First-block cache: block 0 always runs; when its residual changed by less than the threshold
//             (relative L1) since the last computed step, blocks 1.. are skipped and their cached residual
//             added.
//
// The first and last steps, and the first step of each expert, are always computed; the expert switch resets
// the state. Every rank of a data-parallel group (the ranks that share the transformer's sequence-parallel and
// CFG collectives) takes the same decision: a call is skipped only when every rank's every branch would skip
// it. Relative changes are summed over the sequence-parallel group, so they describe whole tensors, not token
// slices. Groups decide apart, so a video's steps do not depend on the layout; where HSDP shard groups span
// several data-parallel groups, a group that skips still joins every block's gather (keep_gathers).
#pragma once

#include <ATen/ATen.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dist/process_group.h"
#include "models/module.h"
#include "models/wan_transformer.h"
#include "pipeline/pipeline_settings.h"

namespace omni::pipeline {

struct StepCacheCounts {
  int computed = 0;
  int skipped = 0;
  // The most the cache held while blocks ran: its residuals and, first-block cache, its last block-0 residuals and
  // this call's (the memory plan's "step cache residuals"; TeaCache's few rows of e0 are left out).
  int64_t held_bytes_peak = 0;
  StepCacheCounts& operator+=(const StepCacheCounts& o) {
    computed += o.computed;
    skipped += o.skipped;
    held_bytes_peak = std::max(held_bytes_peak, o.held_bytes_peak);
    return *this;
  }
};

class StepCache : public models::BlockRunner {
 public:
  // `hidden_size` picks TeaCache's polynomial (Wan2.1 14B's for 3072 and up, 1.3B's below). `sp_group` (null:
  // no sequence parallelism) sums the relative changes; `agree_group` (null: this rank alone) agrees the
  // decisions; `keep_gathers`: skipped blocks still pass through the hooks (gather and release, no compute).
  StepCache(StepCacheMode mode, double threshold, int64_t hidden_size, dist::ProcessGroup* sp_group,
            dist::ProcessGroup* agree_group, bool keep_gathers);

  StepCacheMode mode() const { return mode_; }
  bool enabled() const { return mode_ != StepCacheMode::kNone; }
  // A new video: forget everything, counts included.
  void reset();
  // Before a transformer call: its expert (0, 1), step and step count, and the CFG branch of each batch row
  // (0 cond, 1 uncond).
  void begin_call(int expert, int step, int num_steps, std::vector<int> row_branches);

  // The blocks of one call with the cache's decisions (a decorator of the plain run): x [B, S', D] (this
  // rank's tokens) -> after the last block. Blocks that run pass through the unit hooks; skipped ones are
  // passed over (WanBlockRun::pass_over). Mode none runs every block.
  at::Tensor run(const models::WanBlockRun& blocks, const at::Tensor& x) override;

  // Whether the last call skipped its blocks (for the progress line).
  bool last_skipped() const { return last_skipped_; }
  // Calls computed and skipped, per expert.
  const StepCacheCounts& counts(int expert) const { return counts_[expert]; }

 private:
  struct Branch {
    at::Tensor previous;     // teacache: the last call's e0; fbcache: the last computed step's block-0 residual
    at::Tensor residual;     // what the skipped blocks added at the last computed step
    at::Tensor accumulated;  // teacache: [1] float64 on the device, summed since the last computed call
  };
  // Sum over the sp group of |now - previous| and |previous| for the rows of each of `branch_ids` (previous: the
  // branch's state); returns the relative change per branch,
  // [branches] float64 on the device. `weights` (may be undefined) multiplies the elements first: per-run e0
  // [B, R, 6, D] counts each run once per token it covers ([1, R, 1, 1]), the sums diffusers' per-token table
  // would give.
  at::Tensor relative_changes(const at::Tensor& now, const std::vector<int>& branch_ids,
                              const at::Tensor& weights = at::Tensor());
  // True when every rank of the agreement group may skip: `must_compute` [1] is 1 where this rank must compute
  // (a collective of the group, and the one host read of a step that may skip).
  bool agreed_skip(const at::Tensor& must_compute);
  at::Tensor rows_of(const at::Tensor& t, int branch) const;  // the batch rows of `branch`
  at::Tensor add_residuals(const at::Tensor& x);

  StepCacheMode mode_;
  double threshold_;
  std::vector<double> coefficients_;  // TeaCache's polynomial, highest power first
  dist::ProcessGroup* sp_group_;
  dist::ProcessGroup* agree_group_;
  bool keep_gathers_;
  std::map<int, Branch> branches_;  // by CFG branch, for the current expert
  int expert_ = -1;
  int step_ = 0;
  int num_steps_ = 0;
  std::vector<int> rows_;
  bool forced_ = true;  // this call must compute
  bool last_skipped_ = false;
  StepCacheCounts counts_[2];
};

}  // namespace omni::pipeline
