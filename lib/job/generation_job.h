// One invocation of omni-generate after its options and layout are resolved: the videos spread over the
// data-parallel groups, the model loaded (sharded, LoRA merged), every video generated, written by its group's
// writing rank, and the run summary and report assembled on rank 0. A short driver over the job's parts:
// VideoQueue (statuses, assignments, resume), OutputWriter (paths, replace rules, sidecar, metadata, tensor
// files), MemoryCheck (plans, budget, advice, the dry-run printout) and RankStats (the report's per-rank
// figures); pipeline::WanPipeline makes the videos and knows nothing of any of it.
//
// Phases and failure handling (docs/DESIGN.md section 5: one line, same exit code on every rank, nobody hangs):
//   prepare()  agreed: resolve the model, read the video list, check images, LoRA files and every output path,
//              decide (rank 0, for all) which videos are already written, before any weight is read;
//   load()     agreed: build the pipeline (each rank reads its own shards); skipped when nothing is left to do;
//   run()      collectives in flight: an error on one rank aborts the job (the caller's abort path). A video
//              whose writing fails (disk full, a file that appeared meanwhile) is reported failed and the run
//              goes on; run() then returns 1 on every rank.
//
// Resume (docs/DESIGN.md section 9): with a prompts file, a video whose MP4 exists is complete (outputs are
// written atomically, sidecar first, then the MP4) and is skipped; a run killed and started again produces
// exactly the missing videos. --overwrite regenerates everything.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "core/timer.h"
#include "dist/device_mesh.h"
#include "job/conditioning_inputs.h"
#include "job/output_writer.h"
#include "job/resolved_run.h"
#include "job/run_report.h"
#include "job/video_queue.h"
#include "pipeline/memory_plan.h"
#include "pipeline/wan_pipeline.h"

namespace omni::io {
class ModelDir;
}

namespace omni::job {

class MemoryCheck;

class GenerationJob {
 public:
  // `run`: the model and the video list (job/resolved_run.h). `preset` is the model preset the options were
  // resolved with (kept for the sidecar). `layout_line` says how the layout was chosen (job/auto_layout.h), for
  // the sidecars and the report.
  GenerationJob(config::GenerateOptions options, ResolvedRun run, std::string preset, const dist::DeviceMesh& mesh,
                std::string layout_line = "");
  ~GenerationJob();

  // --dry-run: the model and the video list (configs and headers only), every rank's memory plan against its
  // device's memory (a warning, or an error with --strict-memory), printed by rank 0 once everything is checked
  // (job/run_report.h dry_run_text) and, with --report, written there alone. Returns the exit code.
  int dry_run();
  void prepare();
  // Whether any video is left to generate (false: every output already exists; nothing needs loading).
  bool has_work() const { return queue_ && queue_->has_work(); }
  void load();
  // Generates, writes, summarizes. Returns the exit code, the same on every rank: 0, or 1 when a video failed.
  int run();

 private:
  // The videos' inputs and tasks (job/check_inputs.h), the LoRA records and every rank's memory plan checked
  // against its device: what both a run and a dry run need.
  void prepare_inputs();
  // --vae-parallel without --vae-parallel or --no-vae-parallel: on where each video's group has several ranks
  // that can each take a band of its latent rows, and the job's planned peak (the most of any rank) is lower
  // with it. The decode is the same either way (up to float rounding), so memory alone decides. Sets the
  // option, its source and identity_.vae_parallel_choice; leaves memory_ planned with what it chose.
  void choose_vae_parallel();
  // Every rank's memory plan with or without --vae-parallel; the job's peak (the most of any rank).
  int64_t plan_memory(bool vae_parallel);
  // What a signal's handler prints if it ends the run now (core/files.h set_interrupt_message).
  void update_interrupt_message() const;
  // Gathers every video's status and every rank's figures to rank 0, prints the summary, writes the report;
  // the exit code for all.
  int finish();

  config::GenerateOptions opts_;
  const dist::DeviceMesh& mesh_;
  std::shared_ptr<const pipeline::ModelSpec> model_;
  pipeline::PipelineSettings settings_;  // resolved once (ResolvedRun::settings); the device is set at load
  // What the sidecars record of the run: model, preset, device (set by load), layout and how it was chosen,
  // the checkpoint's flow_shift / boundary_ratio (ResolvedRun::checkpoint).
  RunIdentity identity_;
  std::unique_ptr<VideoQueue> queue_;
  std::vector<pipeline::Task> tasks_;  // per video (TI2V-5B: image mode where the video has an image)
  OutputWriter writer_;
  ConditioningInputs inputs_;  // each video's images and clip, read as run() reaches it
  LoraRecords lora_;
  std::unique_ptr<MemoryCheck> memory_;
  // The time plan's rates (job::run_rates): from the layout choice, else found for a dry run or a --report.
  std::optional<pipeline::DeviceRates> rates_;
  std::vector<double> step_seconds_;  // this rank's computed steps (a step cache's skipped ones apart)
  at::Device device_ = at::kCPU;      // what --device resolved to on this rank
  std::unique_ptr<pipeline::WanPipeline> pipeline_;
  PhaseTimes times_;
  Timer total_;
  RankStats stats_;                                 // this rank's figures, filled as the run goes
  pipeline::StepCacheCounts step_cache_counts_[2];  // over this rank's videos, per expert
};

}  // namespace omni::job
