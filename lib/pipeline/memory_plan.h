// The memory plan (docs/DESIGN.md section 12): what each rank will hold, phase by phase, computed from the
// model's configs and safetensors headers before any weight is read, so that a run that cannot fit fails or
// warns in a second instead of after minutes of loading.
//
// Parts, per rank (bytes):
//   resident     each model's slice of its HSDP units (text encoder, transformer, transformer_2; whole units
//                without HSDP), the VAE (whole on every rank)
//   load         the resident parts loaded so far, and while a component is read on the CPU the checkpoint
//                pages this rank touched (mmap: they count as the process's memory until the file is closed),
//                the read buffer of the largest tensor piece and the LoRA files being merged
//   text_encode  UMT5's gathered root and two blocks (HSDP), its activations at --max-sequence-length
//   denoise      the transformer's gathered root and two blocks (the block running and the one prefetched),
//                the forward's state (tokens, per-token modulation, text context, rotary tables), the largest
//                block's activation peak (attention with its sequence-parallel buffers, or the feed-forward),
//                the step cache's residuals
//   image_encode the VAE encode of the conditioning clip (image-conditioned videos)
//   decode       the VAE decode's working set at the output resolution and the frames (the writing rank; each
//                rank of a group its band with --vae-parallel)
// The peak is the largest phase. Activation figures follow the code's live tensors (wan_transformer_block.cpp,
// wan_attention.cpp, sequence_parallel.cpp) and, for the VAE, a per-level working set calibrated on this
// implementation (memory_plan.cpp says how).
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "dist/device_mesh.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"
#include "pipeline/video_params.h"

namespace omni::pipeline {

// One video as a rank computes it.
struct PlannedVideo {
  VideoParams video;
  bool decoded = false;  // this rank decodes it (the writer; every rank of its group with --vae-parallel)
};

// What one rank does: the videos of its data-parallel group (a group out of videos repeats one to keep the
// gathers in step, without decoding it).
struct RankWork {
  std::vector<PlannedVideo> videos;
  int decode_group = 1;        // ranks that share one decode (--vae-parallel), each a band of rows
  bool gathers_video = false;  // this rank receives the decoded video (the writer)
};

struct MemoryPlanSettings {
  // What runs: the very settings the pipeline is built with (dtypes, float8 weights, --fp8-matmul, the step
  // cache, the LoRA files whose pages are mapped while merging), so that the plan cannot drift from the run.
  PipelineSettings run;
  bool cuda = false;  // device memory; on the CPU the process's resident memory (checkpoint pages count)
  int shard = 1;      // HSDP shard size (1: every unit whole, nothing gathered)
  int ulysses = 1;
  int ring = 1;
  int cfg = 1;
};

// What a part is, for the advice given when a plan does not fit (job/memory_check.cpp), not its name.
enum class MemoryKind {
  kOther,          // sized by the video (activations, latents, buffers): smaller videos or more sp ranks
  kWeights,        // a model's weights (its HSDP slices), or its checkpoint pages while loading: shard more
  kGatheredUnits,  // HSDP units gathered whole for the forward: a smaller dtype
  kVaeWeights,     // the VAE, whole on every rank
  kDecode,         // the VAE decode's working set and the decoded video and frames: --vae-parallel
};

struct MemoryPart {
  std::string name;
  int64_t bytes = 0;
  MemoryKind kind = MemoryKind::kOther;
};

// One phase at its peak: every part live then (resident ones included).
struct MemoryPhase {
  std::string name;
  std::vector<MemoryPart> parts;
  int64_t bytes() const;
};

struct MemoryPlan {
  std::vector<MemoryPhase> phases;  // load, text_encode, image_encode (when used), denoise, decode (when used)
  std::vector<MemoryPart> resident;
  int64_t peak_bytes() const;
  const MemoryPhase& peak_phase() const;
  // The largest part of the peak phase (what to shrink first).
  const MemoryPart& largest_part() const;
  std::string attention_kernel;  // what the activation figures assume ("flash (CPU)", ...)
  // {"planned_peak_bytes", "planned_peak_phase", "planned_resident_bytes", "planned_attention_kernel",
  //  "planned_phases": {phase: {"bytes", "parts": {part: bytes}}}}
  nlohmann::json to_json() const;
  // "3.21 GiB at denoise: transformer 835 MiB, gathered transformer units 1.6 GiB, ..." (one line)
  std::string summary() const;
};

// Bytes one rank sends in one denoising step, per group kind, for one video: by the direct-exchange model the
// process groups count with (dist::TrafficCounts), from the model's shapes and the layout's degrees.
struct StepTraffic {
  int64_t shard = 0;    // HSDP: this rank's slice of the running transformer, to each other shard rank, per call
  int64_t ulysses = 0;  // per block: q, k, v to the head-owning ranks and the attention output back
  int64_t ring = 0;     // per block: K and V passed on ring - 1 times
  int64_t sp = 0;       // per call: the head's output of this rank's tokens to the other sequence-parallel ranks
  int64_t cfg = 0;      // per step: this rank's noise prediction to the other guidance branch
};

// One rank's arithmetic in one denoising step (one call of the running transformer on each of its batch rows):
// what the time plan (pipeline/time_plan.h) turns into seconds at a device's rates.
struct StepWork {
  double matmul_flops = 0;     // the blocks' and the head's linear layers on this rank's tokens (2 x MACs)
  double attention_flops = 0;  // scaled dot-product attention, self and cross (2 x MACs of QK^T and PV)
  double other_bytes = 0;      // the memory the element-wise operators move (norms, modulation, RoPE, GELU, adds)
  double blocks = 0;           // block forwards dispatched, the rest of a call as one more (the CPU charges each)
  double collectives = 0;      // the exchanges and HSDP gathers this rank takes part in (each costs a latency)
  // Once per video:
  double text_encode_flops = 0;  // UMT5's linear layers on the prompt (and the negative prompt)
  // The decode's size in units of Wan2.1's VAE (base width 96) at full resolution: pixel-frames times the
  // decoder's top width squared over 96 squared, over the patch area (Wan2.2's VAE decodes at half resolution).
  double decode_units = 0;
  // Wan2.2-Animate: the segments a video is made in, each its steps and its decode (the others: 1).
  double segments = 1;
};

// One rank's share of a step's traffic of one group kind, split by where its group peers run.
struct StepTrafficSplit {
  dist::GroupKind kind = dist::GroupKind::kShard;
  int64_t intra_node = 0;
  int64_t inter_node = 0;
};
// Per world rank of `mesh`, the StepTraffic `t` of each kind it sends (shard, ulysses, ring, sp, cfg) split by
// where the peers of its group run: a ring hop goes to the next ring rank; the other kinds spread evenly over the
// group's other ranks (the process groups' direct-exchange model).
std::vector<std::vector<StepTrafficSplit>> split_step_traffic(const StepTraffic& t, const dist::DeviceMesh& mesh);
// The same for ranks on nodes `node_of` (per rank) and each kind's groups of ranks (`groups`): a layout weighed
// before its mesh exists (job::layout_options).
std::vector<std::vector<StepTrafficSplit>> split_step_traffic(
    const StepTraffic& t, const std::vector<int>& node_of,
    const std::function<std::vector<std::vector<int>>(dist::GroupKind)>& groups);

// The model's shapes (its spec's configs and safetensors headers; nothing else is read).
class MemoryPlanner {
 public:
  MemoryPlanner(const ModelSpec& model, const MemoryPlanSettings& settings);
  ~MemoryPlanner();

  MemoryPlan plan(const RankWork& work) const;
  // One transformer call per step (cond and uncond batched on one rank, or one each with cfg 2).
  StepTraffic step_traffic(const VideoParams& video) const;
  // One rank's arithmetic in one denoising step of `video` (StepWork).
  StepWork step_work(const VideoParams& video) const;

 private:
  struct Shapes;
  MemoryPlanSettings settings_;
  std::unique_ptr<Shapes> shapes_;
};

}  // namespace omni::pipeline
