// The GPUs a job can be planned for without having one (--plan-for GPU[xN], docs/DESIGN.md section 12): each
// with its memory as CUDA reports it (the budget a run on it checks against), its dense bfloat16 matrix rate,
// its memory bandwidth and its links, each figure with where it comes from. One table, in gpu_table.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace omni::dist {

struct GpuProfile {
  std::string name;            // as --plan-for takes it: "h100-80gb"
  std::string product;         // "NVIDIA H100 80GB HBM3 (SXM)"
  std::string cuda_name;       // what cudaDeviceProp::name holds on such a card, or part of it ("H100 80GB HBM3")
  int64_t memory_bytes = 0;    // cudaDeviceProp::totalGlobalMem (what nvidia-smi lists as total)
  double bf16_tflops = 0;      // dense bfloat16 matrix products, TFLOP/s (datasheet)
  double hbm_gbps = 0;         // device memory bandwidth, GB/s (datasheet)
  double link_gbps = 0;        // to another GPU of its node, one direction, GB/s (NVLink, else PCIe)
  double inter_node_gbps = 0;  // to a GPU of another node, one direction, GB/s (a typical fabric: a range)
  std::string source;          // where the figures come from
  // Measured on such a card (0: not measured; the time plan scales the datasheet's rate as the H200's are):
  double measured_matmul_tflops = 0;     // bf16 matrix products
  double measured_attention_tflops = 0;  // bf16 scaled dot-product attention
};

// Every known GPU, in the order --help and errors list them.
const std::vector<GpuProfile>& gpu_table();

// The entry whose cuda_name is part of `cuda_name` (cudaDeviceProp::name of the GPU a run has); null if none.
const GpuProfile* gpu_by_cuda_name(const std::string& cuda_name);

// What --plan-for names: a GPU, and how many of them a node has (0: as the job is launched).
struct PlanTarget {
  GpuProfile gpu;
  int per_node = 0;
  // "h100-80gb x 8 per node: NVIDIA H100 80GB HBM3 (SXM), 79.65 GiB" (without " x N per node" when not given).
  std::string describe() const;
};

// Parses --plan-for: NAME (a table entry, case-insensitive), NAMExN (N GPUs per node), or
// custom:MEM_GB,TFLOPS,HBM_GBPS,LINK_GBPS[xN] (memory in GB of 10^9 bytes, as datasheets give it). A usage
// error naming the known GPUs otherwise.
PlanTarget parse_plan_for(const std::string& text);

}  // namespace omni::dist
