// The time plan (docs/DESIGN.md section 12): how long a video takes on a GPU of the table (dist/gpu_table.h),
// from the work one rank does (pipeline::StepWork: matrix-product and attention FLOPs, the element-wise
// operators' bytes) at the device's measured rates, the collectives' bytes (pipeline::StepTraffic) over the
// links they cross, the HSDP gathers overlapped with the compute they prefetch for, and the decode scaled from
// one measured decode. An estimate printed beside the memory plan; the dry run's --plan-for gives it.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>

#include "dist/gpu_table.h"
#include "pipeline/memory_plan.h"
#include "pipeline/video_params.h"

namespace omni::pipeline {

// What the plan charges one second of: measured rates where we hold them, else the datasheet's scaled as the
// measured H200 is (GEMM 772 and SDPA 570 of its 989 TFLOP/s).
struct DeviceRates {
  double matmul_tflops = 0;
  double attention_tflops = 0;
  double hbm_gbps = 0;
  double link_gbps = 0;                // within a node
  double inter_node_gbps = 0;          // across nodes (a typical fabric: the plan gives a range down to half of it)
  double decode_seconds_per_unit = 0;  // StepWork::decode_units (Wan2.1's VAE at 480p x 81 frames: 1.93 s, H200)
  // Calibrated (--calibration): the matrix and attention rates are a whole measured forward's (its FLOPs over
  // its time), which holds the element-wise operators' time too; StepWork::other_bytes is not added again.
  bool calibrated = false;
  std::string source;
};
DeviceRates rates_of(const dist::GpuProfile& gpu);
// --calibration FILE: the JSON tools/gpu/check.sh writes (forward_bench --json: one object per measured row).
// The first "a14b" row in its run dtype (no float8 weights) gives the forward's achieved rate, FLOPs over
// seconds; the first "vae21" row the decode's seconds per pixel-frame. An input error naming the file and what
// it lacks otherwise.
DeviceRates calibrate(DeviceRates rates, const std::string& path);

struct TimePlan {
  int steps = 0;
  double flops = 0;              // one step's matrix-product and attention FLOPs on this rank
  double compute_seconds = 0;    // one step: matrix products, attention, element-wise
  double exchange_seconds = 0;   // one step: Ulysses, ring, sequence gather and CFG exchanges (not overlapped)
  double gather_seconds = 0;     // one step: the HSDP gathers (overlapped with the compute)
  double step_seconds = 0;       // max(compute + exchange, gather)
  double step_seconds_slow = 0;  // the same with the inter-node fabric at half its rate
  double text_encode_seconds = 0;
  double decode_seconds = 0;
  double video_seconds = 0;       // text encode + steps x step + decode
  double video_seconds_slow = 0;  // with step_seconds_slow
  nlohmann::json to_json() const;
  std::string describe() const;  // one line: per video, per step, per phase
};

// `intra_bytes` / `inter_node_bytes`: what this rank sends in one step within its node and across nodes (the
// traffic estimate, HSDP's gathers apart); `gather_bytes`: HSDP's, per step. `decode_group`: ranks that decode
// the video together (--vae-parallel).
TimePlan plan_time(const StepWork& work, const VideoParams& video, double intra_bytes, double inter_node_bytes,
                   double gather_bytes, int decode_group, const DeviceRates& rates);

}  // namespace omni::pipeline
