// The compute layout of a run (--layout, docs/DESIGN.md section 4): with --layout auto (the default) and none
// of --ulysses-degree, --ring-degree, --cfg-parallel-size given (flag or --config file), the degrees are chosen
// from the work: the prompt list's length, whether guidance runs, the transformer's heads and the smallest
// video's tokens (dist::choose_parallel); a resumed list counts only the videos it has left. Then, where the
// time plan knows the device (job::run_rates: the CPU measured, a GPU of the table, --plan-for), every layout
// that fits in memory is weighed by its predicted job time (job::layout_options, faster_than_rules). The choice
// depends only on options, model configs, the prompt list and rank 0's view of which outputs exist, so every
// rank makes the same one.
#pragma once

#include <optional>
#include <string>

#include "config/options.h"
#include "dist/communicator.h"
#include "job/memory_check.h"
#include "job/resolved_run.h"
#include "pipeline/time_plan.h"

namespace omni::job {

struct LayoutDecision {
  dist::ParallelConfig parallel;  // the degrees in force
  std::string line;               // "auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 40 heads", "manual: ..."
  bool automatic = false;         // the degrees were chosen (their source: "layout auto")
  // The time plan's rates (job::run_rates) where the choice weighed layouts by them: measured once, reused.
  std::optional<pipeline::DeviceRates> rates;
};

// The layout by the time plan that replaces the rules' (`rules`, null when its degrees are not among `options`):
// the fastest by LayoutOption::work_seconds (the plan without the CPU's dispatch and latency, which move with
// the machine's load) of `options` within `budget` bytes (0: unknown, all fit) that leaves no data-parallel
// group without a video of its own, ties to the least traffic across nodes, if the rules' does not fit or is
// predicted over kTimeMargin slower; null to keep the rules'. The margin is the plan's own error (its CPU step times
// within 15% of measured, tools/bench/time_plan.sh): inside it the rules, which keep traffic low, stand, and a
// noisy start-up profile cannot flip the layout.
constexpr double kTimeMargin = 0.15;
const LayoutOption* faster_than_rules(const std::vector<LayoutOption>& options, const LayoutOption* rules,
                                      int64_t budget);

// From the resolved run (its video list and what is written) and, when the layout is automatic, the model's
// transformer and VAE configs (its spec). Collective over `world` (the nodes, for an automatic layout).
LayoutDecision decide_layout(const config::GenerateOptions& opts, const ResolvedRun& run,
                             const dist::Communicator& world);

}  // namespace omni::job
