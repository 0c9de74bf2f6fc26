// The run report (--report, docs/DESIGN.md section 5): every rank's figures, gathered to rank 0 as one typed
// struct per rank, next to its memory plan; the layout, the timings, the videos' statuses.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "config/options.h"
#include "core/timer.h"
#include "dist/device.h"
#include "dist/device_mesh.h"
#include "dist/process_group.h"
#include "hsdp/hsdp_engine.h"
#include "job/memory_check.h"
#include "job/output_writer.h"
#include "job/video_queue.h"
#include "pipeline/memory_plan.h"
#include "pipeline/model_spec.h"
#include "pipeline/step_cache.h"
#include "pipeline/time_plan.h"

namespace omni::job {

// One rank's measured figures (the report's "ranks" entries, less the plan).
struct RankStats {
  int64_t param_bytes_resident = 0;
  int64_t gathered_bytes_peak = 0;
  int64_t disk_bytes_read = 0;
  int64_t gathered_bytes_per_step = 0;
  double gather_wait_seconds = 0;
  int64_t peak_rss_bytes = 0;
  int64_t peak_device_bytes = 0;
  int64_t load_peak_rss_bytes = 0;
  int64_t load_peak_device_bytes = 0;
  int64_t vae_peak_bytes = 0;         // the largest decode peak of this rank's videos
  int64_t denoise_peak_bytes = 0;     // the largest encode-and-denoise peak of this rank's videos (GenerationResult's)
  int64_t step_cache_held_bytes = 0;  // the most this rank's step cache held beside the blocks (StepCacheCounts)
  double decode_seconds = 0;
  double text_encode_seconds = 0;  // over this rank's videos (real ones), with the image encode
  int videos = 0;                  // the videos this rank helped make (repeat runs apart)
  double step_seconds = 0;         // the median of this rank's computed denoising steps (0: none)
  int64_t baseline_rss_bytes = 0;  // resident bytes before any weight was read
  double compute_seconds = 0;      // text encoding, denoising and decoding of the videos this rank helped make
  // OMNI_COUNT_HOST_READS (dist/host_reads.h): the denoising loops' host reads of device data, in all and the
  // most in one step; -1: not counted.
  int64_t host_reads_denoise = -1;
  int64_t host_reads_max_step = -1;
  // Bytes this rank sent per group kind (indexed by dist::GroupKind), to peers on its node and on others
  // (dist::TrafficCounts): over the whole run, and over its last denoising step.
  static constexpr int kKinds = static_cast<int>(dist::kGroupKinds);
  int64_t sent_intra_node[kKinds] = {};
  int64_t sent_inter_node[kKinds] = {};
  int64_t collectives[kKinds] = {};
  int64_t step_sent_intra_node[kKinds] = {};
  int64_t step_sent_inter_node[kKinds] = {};

  // The run's totals (dist::traffic_totals()), and one step's: the change from `before` to `now`.
  void set_run_traffic(const dist::TrafficByKind& totals);
  void set_step_traffic(const dist::TrafficByKind& now, const dist::TrafficByKind& before);
  // One video's figures: its phases (`real`: a video made, not a repeat run that keeps the gathers in step,
  // counts towards compute_seconds), its decode peak, the bytes its last step gathered.
  void add_video(const PhaseTimes& times, int64_t vae_peak, int64_t denoise_peak, int64_t gathered_per_step, bool real);
  // The median of `steps` (seconds of the steps this rank computed).
  void set_step_seconds(std::vector<double> steps);
  // One video's host reads per denoising step (empty: not counted).
  void add_host_reads(const std::vector<int64_t>& per_step);
  // The end of the run's figures: the sharded models' (`hsdp`, null when nothing was loaded), the process's peaks
  // (host, and `device`'s), the decode time of `times`, the run's traffic.
  void set_end_of_run(const hsdp::HsdpStats* hsdp, int64_t disk_bytes_read, const c10::Device& device,
                      const PhaseTimes& times);

  // The report entry; `cuda`: also cuda_peak_allocated_bytes (peak_device_bytes on a GPU).
  nlohmann::json to_json(bool cuda) const;
};

// The kinds the report's topology and the dry run's listing show, in their order.
const std::vector<dist::GroupKind>& report_group_kinds();

// The head every report has (the run's and the dry run's): world size, device, layout and its choice, memory
// budget (when known), and the topology: the nodes with their ranks, and per group kind the world ranks of each
// group and the most nodes one spans.
nlohmann::json report_header(const dist::DeviceMesh& mesh, const std::string& device, const std::string& layout_choice,
                             const dist::MemoryBudget& budget);

// The sidecars' and report's record of the float8 weights the load held ({"stored", "quantized", "text_encoder",
// "matmul", and "layers" with --weight-dtype float8_e4m3fn}; empty when none), logged; a warning for each flag
// of float8_e4m3fn that held no weight (a model of two blocks has none in the middle: its run is the --dtype run).
nlohmann::json float8_record(const config::GenerateOptions& opts, int64_t stored, int64_t quantized,
                             int64_t text_encoder);

// What --dry-run prints on rank 0: the layout and every group in world ranks (with the nodes each spans), the
// device --device resolves to here, the preset and every setting with its source, where each component comes
// from, `prompts` (describe_prompts), every rank's memory plan and the traffic estimate of a step.
// `time_plan`: its line (pipeline::TimePlan::describe, with --plan-for), or empty.
std::string dry_run_text(const config::GenerateOptions& opts, const dist::DeviceMesh& mesh, const RunIdentity& identity,
                         const pipeline::ModelSpec& model, const std::string& prompts, const MemoryCheck& memory,
                         const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic,
                         const std::string& time_plan);
// The dry run's --report: the header, every rank's plan and its traffic estimate.
nlohmann::json dry_run_report(const dist::DeviceMesh& mesh, const RunIdentity& identity, const MemoryCheck& memory,
                              const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic,
                              const nlohmann::json& time_plan);

// What a finished run reports: rank 0's view of everything the run did.
struct RunSummary {
  const std::vector<RankStats>* ranks = nullptr;  // every rank's figures
  const std::vector<VideoStatus>* statuses = nullptr;
  const VideoQueue* queue = nullptr;
  int64_t param_bytes_total = 0;
  const PhaseTimes* times = nullptr;
  double total_seconds = 0;
  const LoraRecords* lora = nullptr;
  pipeline::StepCacheMode step_cache = pipeline::StepCacheMode::kNone;
  double step_cache_threshold = 0;
  const pipeline::StepCacheCounts* step_cache_counts = nullptr;  // [2], per expert (rank 0's videos)
  const nlohmann::json* time_plan = nullptr;                     // time_measured's (null or empty: no time plan)
};

// The report's time_plan: `predicted` (the largest video on the slowest rank, at `rates`) beside what the ranks
// measured: the slowest rank's median step, text encode and decode per video, and the step's ratio measured /
// predicted.
nlohmann::json time_measured(const pipeline::TimePlan& predicted, const pipeline::DeviceRates& rates,
                             const std::vector<RankStats>& ranks);
// Rank 0's closing lines: the step cache's counts, this rank's gathers and peak (`hsdp`: null without a
// pipeline), and for a list the summary and the failed videos.
void log_run_summary(const config::GenerateOptions& opts, const RunSummary& run, const hsdp::HsdpStats* hsdp,
                     const RankStats& mine);
// The run's --report.
nlohmann::json run_report(const dist::DeviceMesh& mesh, const std::string& device, const RunIdentity& identity,
                          const MemoryCheck& memory, const RunSummary& run);

}  // namespace omni::job
