// One invocation of omni-generate after its options and layout are resolved: the videos spread over the
// data-parallel groups, the model loaded (sharded, LoRA merged), every video generated, written by its group's
// writing rank, and the run summary and report assembled on rank 0.
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

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/device.h"
#include "dist/device_mesh.h"
#include "io/model_dir.h"
#include "pipeline/memory_plan.h"
#include "pipeline/video_list.h"
#include "pipeline/wan_pipeline.h"

namespace omni::pipeline {

class GenerationJob {
 public:
  // `preset` is the model preset the options were resolved with (kept for the sidecar).
  // `layout_line` says how the layout was chosen (pipeline/auto_layout.h), for the sidecars and the report.
  GenerationJob(config::GenerateOptions options, std::string preset, const dist::DeviceMesh& mesh,
                std::string layout_line = "");
  ~GenerationJob();

  // The model and the video list (configs and headers only), and every rank's memory plan; what --dry-run
  // needs. prepare() calls it.
  void resolve();
  void prepare();
  // --dry-run: resolve(), every rank's memory plan against its device's memory (a warning, or an error with
  // --strict-memory), printed by rank 0 after `print_header` (once everything is checked) and, with --report,
  // written there alone. Returns the exit code.
  int dry_run(const std::function<void()>& print_header);
  // Whether any video is left to generate (false: every output already exists; nothing needs loading).
  bool has_work() const;
  void load();
  // Generates, writes, summarizes. Returns the exit code, the same on every rank: 0, or 1 when a video failed.
  int run();

 private:
  enum class Status : int { kPending = 0, kGenerated = 1, kSkipped = 2, kFailed = 3 };
  struct Assignment {
    int video;  // into videos_
    bool real;  // false: a repeat run that keeps the shard group's gathers in step, discarded
  };
  struct LoraRecord {
    std::string path;
    double scale;
    std::string sha256;
  };
  // The videos data-parallel group `dp_index` generates, in order.
  std::vector<Assignment> assignments_of(int dp_index) const;
  std::vector<Assignment> my_assignments() const;
  bool is_writer(int rank) const;
  bool is_writer() const { return is_writer(mesh_.rank()); }
  RankWork work_of(int rank) const;
  // Compares this rank's plan with the device's memory: a warning, or with --strict-memory an agreed error,
  // naming the rank, its largest part and what would make it fit.
  void check_memory_plan();
  void compute_plans();
  // The report's layout, world size, device and memory budget (shared by the run and the dry-run report).
  nlohmann::json report_header() const;
  std::string memory_advice(const MemoryPlan& plan) const;
  void write_outputs(int video, const GenerationResult& result, double seconds);
  // Gathers every video's status to rank 0, prints the summary, writes the report; the exit code for all.
  int finish();
  nlohmann::json lora_json() const;
  // What a signal's handler prints if it ends the run now (core/files.h set_interrupt_message).
  void update_interrupt_message() const;
  // --overwrite, or `path` is a partial output of `video` left by an interrupted run of ours.
  bool may_replace(int video, const std::string& path) const;

  config::GenerateOptions opts_;
  std::string preset_;
  std::string layout_line_;
  const dist::DeviceMesh& mesh_;
  std::string model_path_;
  std::unique_ptr<io::ModelDir> model_;
  std::vector<VideoSpec> videos_;
  std::vector<Status> status_;
  std::vector<Task> tasks_;                         // per video (TI2V-5B: image mode where the video has an image)
  bool replace_report_ = false;                     // --report names this list's report from an earlier run
  std::vector<std::set<std::string>> replaceable_;  // per video: our partial outputs left by a killed run
  std::vector<std::pair<int, int>> image_hw_;       // per video: the conditioning image's size, or 0x0
  std::string image_key_;  // path@HxW of image_, the last conditioning image loaded (one --image for a list)
  at::Tensor image_;
  std::vector<LoraRecord> lora_records_[2];  // --lora, --lora-2 with their SHA-256
  at::Device device_ = at::kCPU;             // what --device resolved to on this rank
  std::unique_ptr<WanPipeline> pipeline_;
  PhaseTimes times_;
  Timer total_;
  int64_t gathered_per_step_ = 0;
  int64_t load_peak_rss_ = 0;             // peak RSS at the end of load()
  int64_t load_peak_device_ = 0;          // peak device allocation at the end of load() (0 on the CPU)
  int64_t vae_peak_bytes_ = 0;            // the largest decode peak of this rank's videos
  StepCacheCounts step_cache_counts_[2];  // over this rank's videos, per expert
  std::unique_ptr<MemoryPlanner> planner_;
  std::vector<MemoryPlan> plans_;  // every rank's
  dist::MemoryBudget budget_;      // this rank's device memory
  int64_t baseline_rss_ = 0;
  double compute_seconds_ = 0;  // text encoding, denoising and decoding of the videos this rank helped make // this
                                // process's resident bytes before any weight was read
};

}  // namespace omni::pipeline
