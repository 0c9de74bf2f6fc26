// The time plan (docs/DESIGN.md section 12): how long a video takes on a GPU of the table (dist/gpu_table.h),
// from the work one rank does (pipeline::StepWork: matrix-product and attention FLOPs, the element-wise
// operators' bytes) at the device's measured rates, the collectives' bytes (pipeline::StepTraffic) over the
// links they cross, the HSDP gathers overlapped with the compute they prefetch for, and the decode scaled from
// one measured decode. An estimate printed beside the memory plan; the dry run's --plan-for gives it.
#pragma once

#include <c10/core/ScalarType.h>

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "dist/communicator.h"
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
  double block_seconds = 0;            // the CPU: a transformer block's operators' dispatch (StepWork::blocks of them)
  double collective_seconds = 0;       // the CPU: one exchange's latency (StepWork::collectives of them)
  // A GPU gathers HSDP's next block while it computes this one; a CPU's ranks copy with the cores they compute
  // on (MPI over shared memory), so there the gathers add to the step.
  bool overlaps_gathers = true;
  // Calibrated (--calibration): the matrix and attention rates are a whole measured forward's (its FLOPs over
  // its time), which holds the element-wise operators' time too; StepWork::other_bytes is not added again.
  bool calibrated = false;
  std::string source;
};
DeviceRates rates_of(const dist::GpuProfile& gpu);
// The median of `v` (0 when empty): the profile's per-call times, a run's step times.
double median(std::vector<double> v);
// --calibration FILE: the JSON tools/gpu/check.sh writes (forward_bench --json: one object per measured row).
// The first "a14b" row in its run dtype (no float8 weights) gives the forward's achieved rate, FLOPs over
// seconds; the first "vae21" row the decode's seconds per pixel-frame. An input error naming the file and what
// it lacks otherwise.
DeviceRates calibrate(DeviceRates rates, const std::string& path);

// The CPU profile: this machine's rates as the run's ranks see them, measured by every rank of `world` at once
// (the ranks of a node share its cores, so each measures its share), at the model's shapes: `tokens` a rank's
// tokens in a block, the transformer's `dim`, `ffn` and `heads`, the run's `dtype`. Each rate is the ranks' mean;
// the link is an all-to-all over `world` (none on one rank). About a quarter of a second. Collective.
struct CpuProbe {
  int64_t tokens = 0;
  int64_t dim = 0;
  int64_t ffn = 0;
  int64_t heads = 0;
  c10::ScalarType dtype = c10::ScalarType::Float;
  int64_t vae_dim = 96;  // the VAE decoder's top width (its convolutions' rate)
};
DeviceRates measure_cpu_rates(const CpuProbe& probe, const dist::Communicator& world);

struct TimePlan {
  int steps = 0;
  double flops = 0;             // one step's matrix-product and attention FLOPs on this rank
  double compute_seconds = 0;   // one step: matrix products, attention, element-wise
  double exchange_seconds = 0;  // one step: Ulysses, ring, sequence gather and CFG exchanges (not overlapped)
  double gather_seconds = 0;    // one step: the HSDP gathers (overlapped with the compute on a GPU)
  double step_seconds = 0;      // max(compute + exchange, gather) on a GPU; their sum on the CPU
  bool gathers_overlapped = true;
  double step_seconds_slow = 0;  // the same with the inter-node fabric at half its rate
  double text_encode_seconds = 0;
  double decode_seconds = 0;
  double video_seconds = 0;       // text encode + steps x step + decode
  double video_seconds_slow = 0;  // with step_seconds_slow
  nlohmann::json to_json() const;
  std::string describe() const;  // one line: per video, per step, per phase
};

// What one rank sends in one step: within its node and across nodes (the traffic estimate, HSDP's gathers
// apart), of which the ring's hops within the node (they travel while the attention computes: hidden up to its
// time); HSDP's gathers.
struct StepBytes {
  double intra_node = 0;
  double inter_node = 0;
  double ring = 0;
  double gather = 0;
};
// `decode_group`: ranks that decode the video together (--vae-parallel).
TimePlan plan_time(const StepWork& work, const VideoParams& video, const StepBytes& bytes, int decode_group,
                   const DeviceRates& rates);

}  // namespace omni::pipeline
