// What a run writes for each video (docs/DESIGN.md sections 5 and 9): the MP4 with its metadata, the JSON
// sidecar with every resolved setting, the --save-tensors and --dump-tensors files; which existing files it may
// replace (--overwrite, or our own partial outputs left by a killed run of the same list); and the LoRA files'
// record that the sidecar, the metadata and the report carry.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "config/options.h"
#include "job/video_queue.h"

namespace omni::pipeline {
struct GenerationResult;
}

namespace omni::job {

// One --lora / --lora-2 file: its resolved path, scale and SHA-256 (rank 0 reads it, every rank gets it).
struct LoraRecord {
  std::string path;
  double scale = 1.0;
  std::string sha256;
};
struct LoraRecords {
  std::vector<LoraRecord> expert[2];  // transformer (--lora), transformer_2 (--lora-2)
  // {"transformer": [{path, name, sha256, scale}, ...], "transformer_2": [...]}; {} without LoRA.
  nlohmann::json to_json() const;
};

// What every video's sidecar and metadata share.
struct RunIdentity {
  std::string model_root;
  std::string pipeline_class;
  std::string preset;
  std::string device;                             // what ran on this rank ("cuda:0"); the settings keep what was asked
  std::string layout;                             // Layout::summary()
  std::string layout_choice;                      // how it was chosen
  std::vector<config::ResolvedSetting> resolved;  // settings the checkpoint decided (recorded in the options' place)
  // The models' float8 weights (transformers', text encoder's): {"stored": N, "quantized": N, "matmul": bool,
  // "layers": --fp8-layers with --weight-dtype float8_e4m3fn}: read as the checkpoint stores them, quantized at
  // load, multiplied in float8. Empty when none.
  nlohmann::json float8_weights;
  nlohmann::json model_files;  // job/model_files.h: the weight files, their sizes and SHA-256 or modification times
  std::string vae_parallel_choice;  // --vae-parallel on or off, and why (GenerationJob::choose_vae_parallel)
};

class OutputWriter {
 public:
  explicit OutputWriter(const config::GenerateOptions& run) : run_(run) {}

  // Every path the pending videos of `queue` and the report will write, checked on this rank before any
  // weight is read (an existing file is an error without --overwrite); a resumed list's own partial outputs
  // and its earlier report are noted as replaceable.
  void check_paths(const VideoQueue& queue);
  // --overwrite, or `path` is a partial output of video `index` left by an interrupted run of ours.
  bool may_replace(int index, const std::string& path) const;
  // The report may replace a file: --overwrite, or it is this list's report from an earlier run.
  bool may_replace_report() const { return run_.overwrite || replace_report_; }

  // Writes video `index`'s tensor files, sidecar and MP4 (the sidecar committed just before the MP4, so that an
  // MP4 on disk always has its sidecar and a run killed while encoding leaves neither).
  void write(int index, const VideoSpec& video, const std::string& task, const pipeline::GenerationResult& result,
             double seconds, const RunIdentity& run, const LoraRecords& lora) const;

 private:
  const config::GenerateOptions& run_;
  std::map<int, std::set<std::string>> replaceable_;  // per video: our partial outputs left by a killed run
  bool replace_report_ = false;
};

// A run report of ours (world_size, layout and the videos' statuses): a resumed list rewrites its own.
bool is_earlier_report(const std::string& path);

}  // namespace omni::job
