// The memory check of a run (docs/DESIGN.md section 12): every rank's plan from the configs and checkpoint
// headers (pipeline::MemoryPlanner), compared with each rank's device memory before any weight is read: a
// warning naming the rank, its largest part and what would make it fit, or with --strict-memory one agreed
// usage error; and the whole printout of --dry-run.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/device.h"
#include "dist/device_mesh.h"
#include "job/video_queue.h"
#include "pipeline/memory_plan.h"
#include "pipeline/time_plan.h"

namespace omni::job {

// What would make `plan` fit, by the kind of its largest part: weights -> HSDP (a larger shard) or bfloat16;
// gathered units -> bfloat16 or a larger shard; the VAE's weights -> a smaller VAE dtype; the decode ->
// --vae-parallel (when the video has several ranks and it is off) or a smaller video; anything else -> a
// smaller video or more sequence-parallel ranks. One phrase for the warning's "to fit: ...".
std::string memory_advice(const pipeline::MemoryPlan& plan, const config::GenerateOptions& run,
                          const dist::Layout& layout);

// What rank `rank` of `mesh` does with the queue's pending videos, for its memory plan: the videos its
// data-parallel group runs (repeats not decoded), whether it gathers the video, its decode group.
pipeline::RankWork rank_work(const VideoQueue& queue, const dist::DeviceMesh& mesh, int rank, bool vae_parallel);
// The same at a layout position (the rank at that position of the mesh).
pipeline::RankWork rank_work_at(const VideoQueue& queue, const dist::Layout& layout, int position, bool vae_parallel);

// The fewest latent rows of the queue's videos (each rank of a --vae-parallel group decodes a band of at least
// one), and in *height the pixel height that gives them.
int64_t fewest_latent_rows(const VideoQueue& queue, const pipeline::ModelSpec& model, int* height);

// A layout the dry run weighs against the one it plans (--plan-for): its degrees, the job's planned peak (the
// most of any rank, with --vae-parallel where it lowers it and is allowed) and the time plan of its largest
// video on its slowest rank; the job's time is its busiest data-parallel group's videos one after the other.
struct LayoutOption {
  dist::Layout layout;
  bool vae_parallel = false;
  int64_t peak_bytes = 0;
  pipeline::TimePlan time;
  double job_seconds = 0;
  // The same without the CPU's per-block dispatch and per-exchange latency: the arithmetic and the bytes moved,
  // what the automatic layout weighs (faster_than_rules). Those two are measured at start-up and move with the
  // machine's load from run to run; a layout chosen by them would change from run to run, and with it the
  // video's float rounding.
  double work_seconds = 0;
  double inter_node_bytes = 0;  // one step, the most any rank sends across nodes
  bool idle_groups = false;     // more data-parallel groups than videos: some only repeat another's
};
// Every layout of `world` ranks with the run's HSDP: dp x cfg (2 only with guidance) x ring x ulysses (a divisor
// of the heads), ranks placed on nodes of `per_node` (0: one node). Sorted: those within `budget` bytes first,
// then by the job's time, then by traffic across nodes.
// The dry run's time plan (--plan-for): the largest video's on the slowest rank of this run (each rank's traffic
// as split over the mesh), then `options` (layout_options) with this run's marked, as text and as the report's
// time_plan object.
struct TimeReport {
  std::string text;
  nlohmann::json json;
};
class MemoryCheck;
// The time plan of the queue's largest video on the slowest rank of `traffic` (each rank's split over the mesh).
pipeline::TimePlan predicted_time(const MemoryCheck& memory, const VideoQueue& queue,
                                  const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic, int decode_group,
                                  const pipeline::DeviceRates& rates);
TimeReport time_report(const MemoryCheck& memory, const VideoQueue& queue,
                       const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic, int decode_group,
                       const pipeline::DeviceRates& rates, const std::vector<LayoutOption>& options,
                       const dist::Layout& layout);
// `node_of`: each rank's node (empty: one node).
std::vector<LayoutOption> layout_options(const pipeline::ModelSpec& model, const pipeline::PipelineSettings& settings,
                                         const config::GenerateOptions& run, int world, const VideoQueue& queue,
                                         const pipeline::DeviceRates& rates, const std::vector<int>& node_of,
                                         int64_t budget);
// "dp 1 x cfg 2 x ring 1 x ulysses 2"
std::string degrees_of(const dist::Layout& layout);

// The rates the time plan charges this run (docs/DESIGN.md section 12): --plan-for's GPU; else on a GPU the
// table's entry for its name (`budget.product`); else on the CPU this machine's profile, measured now by every
// rank at once at the model's widths and the largest video's tokens over the ranks; --calibration's file over a
// GPU's. None for a GPU the table does not know. Collective over `world`.
std::optional<pipeline::DeviceRates> run_rates(const config::GenerateOptions& run, const pipeline::ModelSpec& model,
                                               const pipeline::VideoParams& largest, const dist::MemoryBudget& budget,
                                               const dist::Communicator& world);

class MemoryCheck {
 public:
  // The model's shapes (its spec: configs and headers) for the run's resolved `settings` on `layout`.
  MemoryCheck(const pipeline::ModelSpec& model, const pipeline::PipelineSettings& settings,
              const config::GenerateOptions& run, const dist::Layout& layout);

  pipeline::StepTraffic step_traffic(const pipeline::VideoParams& video) const { return planner_.step_traffic(video); }
  pipeline::StepWork step_work(const pipeline::VideoParams& video) const { return planner_.step_work(video); }
  // Every rank's plan from its work (indexed by rank).
  void plan(const std::vector<pipeline::RankWork>& work);
  const std::vector<pipeline::MemoryPlan>& plans() const { return plans_; }
  // Each rank's plan against its device's memory: logs rank 0's plan, then the worst excess as a warning or,
  // with --strict-memory, an agreed usage error. Collective over `mesh`'s world.
  void check(const dist::DeviceMesh& mesh);
  const dist::MemoryBudget& budget() const { return budget_; }
  const config::GenerateOptions& run() const { return run_; }
  // --dry-run's memory section: every distinct plan by phase and part, the budget and the verdict.
  std::string describe(const std::function<bool(int)>& writes_video) const;

 private:
  const config::GenerateOptions& run_;
  const dist::Layout& layout_;
  pipeline::MemoryPlanner planner_;
  std::vector<pipeline::MemoryPlan> plans_;  // every rank's
  dist::MemoryBudget budget_;                // this rank's device memory
};

}  // namespace omni::job
