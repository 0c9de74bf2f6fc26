#include "pipeline/step_cache.h"

#include <algorithm>

#include "core/error.h"
#include "dist/host_reads.h"

namespace omni::pipeline {
namespace {

// TeaCache4Wan2.1's polynomials for the relative L1 change of e0 (its "use_ret_steps" mode), highest power
// first: fitted on Wan2.1 T2V 14B and 1.3B. Wan2.2 has no published fit; its experts have the 14B's width.
const std::vector<double> kTeaCache14B = {-3.03318725e+05, 4.90537029e+04, -2.65530556e+03, 5.87365115e+01,
                                          -3.15583525e-01};
const std::vector<double> kTeaCache1_3B = {-5.21862437e+04, 9.23041404e+03, -5.28275948e+02, 1.36987616e+01,
                                           -4.99875664e-02};

// Elementwise on x's device, in its dtype (float64 here).
at::Tensor polynomial(const std::vector<double>& c, const at::Tensor& x) {
  at::Tensor y = at::zeros_like(x);
  for (double a : c) y = y * x + a;  // Horner
  return y;
}

}  // namespace

double default_step_cache_threshold(StepCacheMode mode) {
  // TeaCache4Wan2.1 runs its 14B models at 0.2 (e0 mode); first-block caches commonly at 0.05-0.1.
  return mode == StepCacheMode::kTeaCache ? 0.2 : mode == StepCacheMode::kFirstBlock ? 0.08 : 0.0;
}

StepCache::StepCache(StepCacheMode mode, double threshold, int64_t hidden_size, dist::ProcessGroup* sp_group,
                     dist::ProcessGroup* agree_group, bool keep_gathers)
    : mode_(mode),
      threshold_(threshold),
      coefficients_(hidden_size >= 3072 ? kTeaCache14B : kTeaCache1_3B),
      sp_group_(sp_group),
      agree_group_(agree_group),
      keep_gathers_(keep_gathers) {}

void StepCache::reset() {
  branches_.clear();
  expert_ = -1;
  counts_[0] = counts_[1] = StepCacheCounts{};
  last_skipped_ = false;
}

void StepCache::begin_call(int expert, int step, int num_steps, std::vector<int> row_branches) {
  const bool switched = expert != expert_;
  if (switched) branches_.clear();  // a new expert starts from nothing
  expert_ = expert;
  step_ = step;
  num_steps_ = num_steps;
  rows_ = std::move(row_branches);
  forced_ = switched || step == 0 || step + 1 == num_steps;
}

at::Tensor StepCache::rows_of(const at::Tensor& t, int branch) const {
  // Narrowed rows, not an index tensor: uploading one would make the host wait for the device.
  std::vector<at::Tensor> rows;
  for (size_t r = 0; r < rows_.size(); ++r)
    if (rows_[r] == branch) rows.push_back(t.narrow(0, static_cast<int64_t>(r), 1));  // [1, ...]
  if (static_cast<int64_t>(rows.size()) == t.size(0)) return t;
  return rows.size() == 1 ? rows.front() : at::cat(rows, 0);  // [rows of branch, ...]
}

at::Tensor StepCache::relative_changes(const at::Tensor& now, const std::vector<int>& branch_ids,
                                       const at::Tensor& weights) {
  // Per branch: sum |now - previous| and sum |previous|, in float64, summed over the sp group's token slices. The
  // float64 values are made a slice of dim 1 (tokens, or runs) at a time: whole [B, S, D] float64 copies would
  // be ~6 GB each at 720p, batch 2, none of them in the memory plan.
  constexpr int64_t kChunkElements = int64_t{1} << 22;  // 32 MiB of float64 per temporary
  std::vector<at::Tensor> sums;
  for (size_t b = 0; b < branch_ids.size(); ++b) {
    // This rank's rows of branch branch_ids[b] (with cfg parallelism a rank holds branch 1 alone).
    const at::Tensor a = rows_of(now, branch_ids[b]), p = branches_.at(branch_ids[b]).previous;  // [B, S, ...]
    const int64_t len = a.size(1), per_index = a.numel() / std::max<int64_t>(1, len);
    const int64_t step = std::max<int64_t>(1, kChunkElements / std::max<int64_t>(1, per_index));
    at::Tensor diff_sum = at::zeros({}, a.options().dtype(at::kDouble)), base_sum = at::zeros_like(diff_sum);
    for (int64_t i = 0; i < len; i += step) {
      const int64_t n = std::min(step, len - i);
      const at::Tensor pc = p.narrow(1, i, n).to(at::kDouble);  // [B, n, ...]
      at::Tensor diff = (a.narrow(1, i, n).to(at::kDouble) - pc).abs_(), base = pc.abs();
      if (weights.defined()) {
        // [1, R, 1, 1] per run of tokens, along dim 1 like the values.
        const at::Tensor w = weights.size(1) == len ? weights.narrow(1, i, n) : weights;
        diff.mul_(w);
        base.mul_(w);
      }
      diff_sum.add_(diff.sum());
      base_sum.add_(base.sum());
    }
    sums.push_back(diff_sum);
    sums.push_back(base_sum);
  }
  at::Tensor all = at::stack(sums).contiguous();  // [2 * branches]: diff, base of branch 0, then of 1
  if (sp_group_ != nullptr) sp_group_->all_reduce(all)->wait();
  const at::Tensor pairs = all.view({-1, 2});  // [branches, 2]
  const at::Tensor diff = pairs.select(1, 0), base = pairs.select(1, 1);
  return at::where(base > 0, diff / base, at::ones_like(base));  // [branches] float64
}

bool StepCache::agreed_skip(const at::Tensor& must_compute) {
  // must_compute: [1] float32, 1 where this rank must compute. The max over the group is 0 when every rank may
  // skip; reading it is the step's one host read.
  at::Tensor any = must_compute;
  if (agree_group_ != nullptr) {
    any = must_compute.to(agree_group_->device());
    agree_group_->all_reduce(any, dist::ReduceOp::kMax)->wait();
  }
  return any.item<float>() == 0.0f;
}

at::Tensor StepCache::add_residuals(const at::Tensor& x) {
  // Row r takes the next row of its branch's residual.
  std::map<int, int64_t> next;
  std::vector<at::Tensor> parts;
  for (int b : rows_) parts.push_back(branches_.at(b).residual.narrow(0, next[b]++, 1));
  return x + at::cat(parts, 0);
}

at::Tensor StepCache::run(const models::WanBlockRun& blocks, const at::Tensor& x) {
  const int n = blocks.num_blocks();
  const at::Tensor& timestep_proj = blocks.timestep_proj();
  last_skipped_ = false;
  if (!enabled() || n == 0) return blocks.run(0, n, x);

  std::vector<int> branch_ids;
  for (int b : rows_)
    if (std::find(branch_ids.begin(), branch_ids.end(), b) == branch_ids.end()) branch_ids.push_back(b);
  const bool have_state = std::all_of(branch_ids.begin(), branch_ids.end(), [&](int b) {
    auto it = branches_.find(b);
    return it != branches_.end() && it->second.previous.defined() && it->second.residual.defined();
  });
  // e0 per run of tokens ([B, R, 6, D]) weighs each run by its tokens here, as diffusers' per-token table does.
  at::Tensor run_weights;
  if (!blocks.runs().empty()) {
    std::vector<double> lengths;
    for (int64_t r = 0; r < blocks.runs().size(); ++r) lengths.push_back(static_cast<double>(blocks.runs().length(r)));
    run_weights = dist::upload(at::tensor(lengths, at::kDouble).view({1, -1, 1, 1}), timestep_proj.device());
  }  // run_weights: [1, R, 1, 1]
  // Every rank evaluates the same tensors (summed over the sp group); the threshold 0 never skips. A call that
  // must compute (first, last, an expert's first) reads nothing: what it would accumulate is reset when it
  // computes. Every rank of the agreement group knows these alike, so all of them join its collective or none.
  // The decision is made on the device and read once.
  auto may_skip = [&](const at::Tensor& now, bool accumulate) {
    if (forced_ || !have_state || threshold_ <= 0) return false;
    const at::Tensor rel = relative_changes(now, branch_ids, now.dim() == 4 ? run_weights : at::Tensor());  // [K]
    std::vector<at::Tensor> changes;
    for (size_t k = 0; k < branch_ids.size(); ++k) {
      Branch& br = branches_.at(branch_ids[k]);
      at::Tensor change = rel.narrow(0, static_cast<int64_t>(k), 1);  // [1] float64
      if (accumulate) {
        change = polynomial(coefficients_, change);
        if (br.accumulated.defined()) change = br.accumulated + change;
        br.accumulated = change;
      }
      changes.push_back(change);
    }
    // NaN compares false: a branch whose change is not a number computes.
    const at::Tensor must_compute = at::logical_not(at::cat(changes) < threshold_).any().to(at::kFloat).view({1});
    return agreed_skip(must_compute);
  };

  // A skip replaces blocks [from, n) by their cached residual: all of them (TeaCache, judged by the timestep
  // modulation) or all after the first (first-block cache, judged by block 0's residual).
  const int expert = std::max(expert_, 0);
  const bool tea = mode_ == StepCacheMode::kTeaCache;
  const int from = tea ? 0 : 1;
  at::Tensor base = x, first_residual;
  bool skip;
  if (tea) {
    skip = may_skip(timestep_proj, /*accumulate=*/true);
    for (int b : branch_ids) branches_[b].previous = rows_of(timestep_proj, b).clone();  // e0 of every call
  } else {
    base = blocks.run(0, 1, x);
    first_residual = base - x;
    skip = may_skip(first_residual, /*accumulate=*/false);
  }
  if (skip) {
    blocks.pass_over(from, keep_gathers_);
    ++counts_[expert].skipped;
    last_skipped_ = true;
    return add_residuals(base);
  }
  int64_t held = first_residual.defined() ? first_residual.nbytes() : 0;
  for (const auto& [b, br] : branches_)
    held +=
        (br.previous.defined() && !tea ? br.previous.nbytes() : 0) + (br.residual.defined() ? br.residual.nbytes() : 0);
  counts_[expert].held_bytes_peak = std::max(counts_[expert].held_bytes_peak, held);
  at::Tensor out = blocks.run(from, n, base);
  const at::Tensor added = out - base;
  for (int b : branch_ids) {
    Branch& br = branches_[b];
    br.residual = rows_of(added, b).clone();
    br.accumulated = at::Tensor();
    if (!tea) br.previous = rows_of(first_residual, b).clone();  // compared with the next computed step's
  }
  ++counts_[expert].computed;
  return out;
}

}  // namespace omni::pipeline
