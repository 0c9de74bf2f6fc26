// One invocation of omni-generate after its options and layout are resolved: the prompts spread over the
// data-parallel groups, the model loaded (sharded), every video generated, written by its group's writing rank,
// and the run report assembled on rank 0.
//
// Phases and failure handling (docs/DESIGN.md section 5: one line, same exit code on every rank, nobody hangs):
//   prepare()  agreed: resolve the model, read prompts, check the image and every output path, before any
//              weight is read;
//   load()     agreed: build the pipeline (each rank reads its own shards);
//   run()      collectives in flight: an error on one rank aborts the job (the caller's abort path).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/device_mesh.h"
#include "io/model_dir.h"
#include "pipeline/wan_pipeline.h"

namespace omni::pipeline {

class GenerationJob {
 public:
  // `preset` is the model preset the options were resolved with (kept for the sidecar).
  GenerationJob(config::GenerateOptions options, std::string preset, const dist::DeviceMesh& mesh);
  ~GenerationJob();

  void prepare();
  void load();
  void run();

 private:
  struct Assignment {
    int prompt_index;  // into prompts_
    bool real;         // false: a repeat run that keeps the shard group's gathers in step, discarded
  };
  std::vector<Assignment> my_assignments() const;
  bool is_writer() const;
  void write_outputs(int prompt_index, const GenerationResult& result, double seconds);
  void write_report();

  config::GenerateOptions opts_;
  std::string preset_;
  const dist::DeviceMesh& mesh_;
  std::string model_path_;
  std::unique_ptr<io::ModelDir> model_;
  Task task_ = Task::kTextToVideo;
  std::vector<std::string> prompts_;
  std::vector<std::string> outputs_;
  std::vector<std::string> tensor_paths_;
  std::vector<std::string> dump_paths_;
  int image_height_ = 0, image_width_ = 0;
  at::Tensor image_;              // [1, 3, H, W] in [-1, 1] at the output size
  at::Device device_ = at::kCPU;  // what --device resolved to on this rank
  std::unique_ptr<WanPipeline> pipeline_;
  PhaseTimes times_;
  Timer total_;
  int64_t gathered_per_step_ = 0;
};

// "cat.mp4", 3 prompts -> "cat-0000.mp4", "cat-0001.mp4", "cat-0002.mp4"; one prompt keeps the path.
std::string indexed_path(const std::string& path, int index, int count);

}  // namespace omni::pipeline
