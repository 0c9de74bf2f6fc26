// The compute layout of a run (--layout, docs/DESIGN.md section 4): with --layout auto (the default) and none
// of --ulysses-degree, --ring-degree, --cfg-parallel-size given (flag or --config file), the degrees are chosen
// from the work: the prompt list's length, whether guidance runs, the transformer's heads and the smallest
// video's tokens (dist::choose_parallel); a resumed list counts only the videos it has left. The choice
// depends only on options, model configs, the prompt list and rank 0's view of which outputs exist, so every
// rank makes the same one.
#pragma once

#include <string>

#include "config/options.h"
#include "dist/communicator.h"
#include "job/resolved_run.h"

namespace omni::job {

struct LayoutDecision {
  dist::ParallelConfig parallel;  // the degrees in force
  std::string line;               // "auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 40 heads", "manual: ..."
  bool automatic = false;         // the degrees were chosen (their source: "layout auto")
};

// From the resolved run (its video list and what is written) and, when the layout is automatic, the model's
// transformer and VAE configs (its spec). Collective over `world` (the nodes, for an automatic layout).
LayoutDecision decide_layout(const config::GenerateOptions& opts, const ResolvedRun& run,
                             const dist::Communicator& world);

}  // namespace omni::job
