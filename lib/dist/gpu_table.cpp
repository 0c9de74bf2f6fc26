#include "dist/gpu_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/memory.h"

namespace omni::dist {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// Memory is what CUDA reports as the card's total (nvidia-smi's "MiB" total): a run on it checks its plan
// against that. Rates are the vendors' dense (no sparsity) figures; the measured ones on the cards lent to this
// project are noted where we have them (tools/gpu/check.sh's calibration replaces them).
std::vector<GpuProfile> make_table() {
  return {
      {"h100-80gb", "NVIDIA H100 80GB HBM3 (SXM)", "H100 80GB HBM3", 81559 * kMiB, 989.4, 3350, 450, 50,
       "memory: nvidia-smi on the H100 lent to this project (81559 MiB, 2026-11-13); rates: NVIDIA H100 datasheet "
       "(SXM5: 989 TFLOP/s dense bf16, 3.35 TB/s, NVLink 4 900 GB/s both ways); measured there: 798 TFLOP/s "
       "(8192^3 bf16 product), 3.0 TB/s copy; across nodes: one 400 Gb/s NDR InfiniBand port per GPU (DGX H100). The "
       "time plan takes the H200's rates in diffusers' Wan runs for the same chip (its 798 is on random data)",
       0, 0},
      {"h200", "NVIDIA H200 (SXM)", "H200", 143771 * kMiB, 989.4, 4800, 450, 50,
       "memory: nvidia-smi on the H200 lent to this project (143771 MiB, 2026-10-27); rates: NVIDIA H200 "
       "datasheet (989 TFLOP/s dense bf16, 4.8 TB/s, NVLink 4 900 GB/s both ways); measured there: 788 TFLOP/s, "
       "4.3 TB/s copy; across nodes: 400 Gb/s per GPU (HGX H200); in diffusers' Wan runs there GEMM 772 and SDPA 570 "
       "TFLOP/s",
       772, 570},
      {"b200", "NVIDIA B200 (HGX)", "B200", 180000000000, 2250, 8000, 900, 50,
       "NVIDIA HGX B200 datasheet: 180 GB HBM3e per GPU, 2.25 PFLOP/s dense bf16 (4.5 with sparsity), 8 TB/s, "
       "NVLink 5 1.8 TB/s both ways; across nodes: 400 Gb/s per GPU; not measured here"},
      {"a100-80gb", "NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB", 81920 * kMiB, 312, 2039, 300, 25,
       "NVIDIA A100 datasheet (SXM4 80GB: 312 TFLOP/s dense bf16, 2.039 TB/s, NVLink 3 600 GB/s both ways); memory "
       "as nvidia-smi lists the card (81920 MiB); across nodes: 200 Gb/s HDR InfiniBand per GPU (DGX A100); not "
       "measured here"},
      {"l40s", "NVIDIA L40S", "L40S", 46068 * kMiB, 362, 864, 32, 25,
       "NVIDIA L40S datasheet (48 GB GDDR6: 362 TFLOP/s dense bf16, 733 with sparsity, 864 GB/s; no NVLink: PCIe "
       "Gen4 x16, 32 GB/s each way); memory as nvidia-smi lists the card (46068 MiB); across nodes: 200 Gb/s per "
       "GPU; not measured here"},
  };
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string known_names() {
  std::string out;
  for (const auto& g : gpu_table()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

double positive_number(const std::string& text, const std::string& what, const std::string& whole) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  OMNI_CHECK_USAGE(used == text.size() && !text.empty() && std::isfinite(v) && v > 0, "--plan-for ", whole, ": ", what,
                   " must be a positive number, got '", text, "'");
  return v;
}

}  // namespace

const std::vector<GpuProfile>& gpu_table() {
  static const std::vector<GpuProfile> table = make_table();
  return table;
}

const GpuProfile* gpu_by_cuda_name(const std::string& cuda_name) {
  for (const auto& g : gpu_table())
    if (!cuda_name.empty() && cuda_name.find(g.cuda_name) != std::string::npos) return &g;
  return nullptr;
}

std::string PlanTarget::describe() const {
  return str_cat(gpu.name, per_node > 0 ? str_cat(" x ", per_node, " per node") : "", ": ", gpu.product, ", ",
                 format_bytes(gpu.memory_bytes));
}

PlanTarget parse_plan_for(const std::string& text) {
  PlanTarget t;
  std::string spec = lower(text);
  // A trailing xN: the GPUs of one node. Names hold no "x" followed only by digits.
  if (const size_t x = spec.rfind('x'); x != std::string::npos && x + 1 < spec.size() &&
                                        std::all_of(spec.begin() + static_cast<std::ptrdiff_t>(x) + 1, spec.end(),
                                                    [](unsigned char c) { return std::isdigit(c); })) {
    const double n = positive_number(spec.substr(x + 1), "the GPUs per node after 'x'", text);
    OMNI_CHECK_USAGE(n == std::floor(n) && n <= 1024, "--plan-for ", text,
                     ": GPUs per node must be a whole number up to 1024");
    t.per_node = static_cast<int>(n);
    spec.resize(x);
  }
  if (spec.rfind("custom:", 0) == 0) {
    std::vector<std::string> fields;
    std::stringstream ss(spec.substr(7));
    for (std::string f; std::getline(ss, f, ',');) fields.push_back(f);
    OMNI_CHECK_USAGE(
        fields.size() == 4, "--plan-for ", text,
        ": custom takes four numbers, custom:MEM_GB,TFLOPS,HBM_GBPS,LINK_GBPS (e.g. custom:80,989,3350,450)");
    t.gpu.name = "custom";
    t.gpu.product = "as given";
    t.gpu.memory_bytes = static_cast<int64_t>(positive_number(fields[0], "MEM_GB", text) * 1e9);
    t.gpu.bf16_tflops = positive_number(fields[1], "TFLOPS", text);
    t.gpu.hbm_gbps = positive_number(fields[2], "HBM_GBPS", text);
    t.gpu.link_gbps = positive_number(fields[3], "LINK_GBPS", text);
    t.gpu.inter_node_gbps = std::min(t.gpu.link_gbps, 50.0);
    t.gpu.source = "--plan-for " + text;
    return t;
  }
  for (const auto& g : gpu_table())
    if (g.name == spec) {
      t.gpu = g;
      return t;
    }
  OMNI_FAIL_USAGE("--plan-for: unknown GPU '", text, "'; known: ", known_names(),
                  ", each optionally xN (N GPUs per node), or custom:MEM_GB,TFLOPS,HBM_GBPS,LINK_GBPS");
}

}  // namespace omni::dist
