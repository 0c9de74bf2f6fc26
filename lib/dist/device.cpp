#include "dist/device.h"

#include <ATen/Context.h>
#include <ATen/Version.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/headeronly/version.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "core/docs_links.h"
#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "dist/mpi_check.h"

#ifdef OMNI_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#include <cuda_runtime_api.h>
#endif
#ifdef OMNI_WITH_NCCL
#include <nccl.h>
#endif

namespace omni::dist {

std::string DeviceRequest::str() const {
  switch (kind) {
    case kAuto:
      return "auto";
    case kCpu:
      return "cpu";
    case kCuda:
      return index < 0 ? "cuda" : "cuda:" + std::to_string(index);
  }
  OMNI_FAIL("a device request outside its kinds");
}

DeviceRequest DeviceRequest::parse(const std::string& v, const std::string& where) {
  DeviceRequest r;
  if (v == "auto") return r;
  if (v == "cpu") {
    r.kind = kCpu;
    return r;
  }
  r.kind = kCuda;
  if (v == "cuda") return r;
  // cuda:N, N a non-negative decimal small enough for a device index.
  const bool indexed = v.size() > 5 && v.size() <= 9 && v.rfind("cuda:", 0) == 0 &&
                       v.find_first_not_of("0123456789", 5) == std::string::npos;
  OMNI_CHECK_USAGE(indexed, where, " must be auto, cpu, cuda or cuda:N, got '", v, "'");
  r.index = std::stoi(v.substr(5));
  return r;
}
namespace {

// What a rank found out about its own request, before the collective that compares ranks.
struct LocalChoice {
  c10::Device device = c10::Device(c10::kCPU);
  std::string error;   // non-empty: this rank cannot honour the request
  bool usage = true;   // a usage error (exit 2); false: CUDA itself failed (exit 1)
  char uuid[40] = {};  // the GPU's UUID as hex text, empty for the CPU
};

std::string version_text(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string((v / minor_div) % minor_mod);
}

#ifdef OMNI_WITH_CUDA
std::string uuid_hex(const cudaUUID_t& uuid) {
  std::string out;
  char byte[3];
  for (char c : uuid.bytes) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(c));
    out += byte;
  }
  return out;
}
#endif

// The GPU a rank takes: cuda:N names it, otherwise node-local rank % visible GPUs (may be out of range for
// cuda:N; the caller checks).
int gpu_index(const DeviceRequest& spec, int local_rank, int gpus) {
  return spec.index >= 0 ? spec.index : local_rank % gpus;
}

// The ranks of `world` on this node, ordered by world rank.
Communicator node_of(const Communicator& world) {
  MPI_Comm node_comm = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(world.comm(), MPI_COMM_TYPE_SHARED, world.rank(), MPI_INFO_NULL, &node_comm));
  return Communicator(node_comm, /*owned=*/true);
}

LocalChoice choose(const DeviceRequest& spec, int local_rank) {
  using K = DeviceRequest;
  LocalChoice out;
  if (spec.kind == K::kCpu) return out;
  const int gpus = visible_gpu_count();
  if (spec.kind == K::kAuto && gpus == 0) return out;
  if (gpus == 0) {
    out.error = str_cat("--device ", spec.str(), ": no CUDA device is visible (",
#ifdef OMNI_WITH_CUDA
                        "no NVIDIA driver or GPU found, or CUDA_VISIBLE_DEVICES hides them",
#else
                        "this LibTorch was built without CUDA",
#endif
                        "); use --device cpu or --device auto");
    return out;
  }
  const int index = gpu_index(spec, local_rank, gpus);
  if (spec.index >= 0) {
    if (index >= gpus) {
      out.error =
          str_cat("--device ", spec.str(), ": this rank sees ", gpus, " GPU(s) (cuda:0 to cuda:", gpus - 1, ")");
      return out;
    }
  }
  out.device = c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index));
#ifdef OMNI_WITH_CUDA
  // Current before any other CUDA call of this process: the context, NCCL's and LibTorch's allocations all
  // land on this GPU.
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, index) == cudaSuccess) {
    std::snprintf(out.uuid, sizeof(out.uuid), "%s", uuid_hex(prop.uuid).c_str());
  } else {
    cudaGetLastError();  // clear it; the UUID check then compares indices only
    std::snprintf(out.uuid, sizeof(out.uuid), "index-%d", index);
  }
#endif
  return out;
}

}  // namespace

void set_float32_math(Float32Math math) {
  using P = at::Float32Precision;
  // Both set, never left to LibTorch's NONE: the report reads them back, and a library loaded later cannot
  // change what "default" means for this run.
  const P matmul = math == Float32Math::kTf32 ? P::TF32 : P::IEEE;
  const P conv = math == Float32Math::kIeee ? P::IEEE : P::TF32;
  at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::MATMUL, matmul);
  at::globalContext().setFloat32Precision(at::Float32Backend::CUDA, at::Float32Op::CONV, conv);
}

std::string float32_math() {
  // LibTorch's new precision API only (its legacy getters refuse to answer once the new setters were used).
  // NONE defers to the backend's ALL entry, then to the generic one.
  auto& ctx = at::globalContext();
  auto resolve = [&](at::Float32Op op) {
    auto p = ctx.float32Precision(at::Float32Backend::CUDA, op);
    if (p == at::Float32Precision::NONE) p = ctx.float32Precision(at::Float32Backend::CUDA, at::Float32Op::ALL);
    if (p == at::Float32Precision::NONE) p = ctx.float32Precision(at::Float32Backend::GENERIC, at::Float32Op::ALL);
    return p == at::Float32Precision::TF32 ? std::string("tf32") : std::string("ieee");
  };
  const std::string matmul = resolve(at::Float32Op::MATMUL), conv = resolve(at::Float32Op::CONV);
  if (matmul == conv) return matmul;
  return "matmul " + matmul + ", conv " + conv;
}

std::string cpu_kernels() {
  std::string out = at::get_cpu_capability();
  if (const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA"); isa != nullptr && *isa != '\0')
    out += std::string(", oneDNN up to ") + isa;
  return out;
}

int visible_gpu_count() {
#ifdef OMNI_WITH_CUDA
  int count = 0;
  // Without a driver (a CPU machine with a CUDA LibTorch) this fails; that means no GPU, not an error.
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
#else
  return 0;
#endif
}

c10::Device select_device(const DeviceRequest& spec, const Communicator& world, bool allow_shared_gpu) {
  // Ranks of one node, ordered by world rank: the node-local rank picks the GPU.
  const Communicator node = node_of(world);

  // No throw before the exchange: a rank that fails here must still enter it, or the others wait forever.
  LocalChoice mine;
  try {
    mine = choose(spec, node.rank());
  } catch (const std::exception& e) {
    mine = LocalChoice{};
    mine.error = str_cat("--device ", spec.str(), ": ", e.what());
    mine.usage = false;
  }

  // Every rank enters the exchange, failed or not, so that none waits on one that already threw.
  std::vector<char> uuids(sizeof(mine.uuid) * node.size());
  MPI_CHECK(
      MPI_Allgather(mine.uuid, sizeof(mine.uuid), MPI_CHAR, uuids.data(), sizeof(mine.uuid), MPI_CHAR, node.comm()));
  if (!mine.error.empty()) {
    if (mine.usage) OMNI_FAIL_USAGE(mine.error);
    OMNI_FAIL(mine.error);
  }

  if (mine.device.is_cuda() && !allow_shared_gpu) {
    const auto world_ranks = node.world_ranks();
    char host[MPI_MAX_PROCESSOR_NAME] = {};
    int len = 0;
    MPI_Get_processor_name(host, &len);
    for (int other = 0; other < node.size(); ++other) {
      if (other == node.rank()) continue;
      const char* theirs = uuids.data() + other * sizeof(mine.uuid);
      if (std::strcmp(theirs, mine.uuid) != 0) continue;
      const int a = std::min(world.rank(), world_ranks[other]), b = std::max(world.rank(), world_ranks[other]);
      OMNI_FAIL_USAGE("ranks ", a, " and ", b, " on node ", host, " would share one GPU (", mine.device, ", UUID ",
                      mine.uuid, "): ", node.size(), " ranks on a node with ", visible_gpu_count(),
                      " visible GPU(s). Launch at most one rank per GPU, or pass --allow-shared-gpu (",
                      docs::kSharedGpu, ")");
    }
  }
  if (spec.kind == DeviceRequest::kAuto && mine.device.is_cpu())
    OMNI_INFO("--device auto: running on the CPU (",
#ifdef OMNI_WITH_CUDA
              "no NVIDIA driver or no visible GPU",
#else
              "this LibTorch has no CUDA",
#endif
              ")");
  return mine.device;
}

bool runs_on_cuda(const DeviceRequest& spec) {
  return spec.kind != DeviceRequest::kCpu && visible_gpu_count() > 0;
}

MemoryBudget memory_budget(const DeviceRequest& spec, const Communicator& world) {
  const Communicator node = node_of(world);
  MemoryBudget out;
  const int gpus = visible_gpu_count();
  const bool cuda = runs_on_cuda(spec);
#ifdef OMNI_WITH_CUDA
  if (cuda) {
    // The GPU select_device() will pick, and the node's ranks that land on it too (--allow-shared-gpu).
    const int index = gpu_index(spec, node.rank(), gpus);
    int sharing = 0;
    for (int r = 0; r < node.size(); ++r) sharing += gpu_index(spec, r, gpus) == index ? 1 : 0;
    cudaDeviceProp prop{};
    if (index >= 0 && index < gpus && cudaGetDeviceProperties(&prop, index) == cudaSuccess) {
      out.bytes = static_cast<int64_t>(prop.totalGlobalMem) / std::max(sharing, 1);
      out.what = str_cat("GPU ", index, " (", prop.name, ") ", format_bytes(static_cast<int64_t>(prop.totalGlobalMem)),
                         sharing > 1 ? str_cat(" / ", sharing, " ranks sharing it") : "");
      out.product = prop.name;
    } else {
      cudaGetLastError();
    }
    return out;
  }
#endif
  (void)cuda;
  const int64_t host = host_memory_bytes();
  if (host > 0) {
    out.bytes = host / node.size();
    out.what = str_cat("host memory ", format_bytes(host),
                       node.size() > 1 ? str_cat(" / ", node.size(), " ranks on this node") : "");
  }
  return out;
}

namespace {

// The caching allocator's aggregate allocated-bytes statistic on `device`: its peak or its current value (0 on
// the CPU).
int64_t allocated_stat(const c10::Device& device, bool peak) {
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index());
    const auto& s = stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)];
    return peak ? s.peak : s.current;
  }
#endif
  (void)device;
  (void)peak;
  return 0;
}

}  // namespace

namespace {
// The allocator's peak, which reset_peak_device_bytes lowers for a phase: the whole run's is kept here (one
// device per process).
RunPeak run_device_peak;
}  // namespace

int64_t peak_device_bytes(const c10::Device& device) {
  return run_device_peak.read(allocated_stat(device, /*peak=*/true));
}

int64_t peak_device_bytes_since_reset(const c10::Device& device) {
  return allocated_stat(device, /*peak=*/true);
}

int64_t allocated_device_bytes(const c10::Device& device) {
  return allocated_stat(device, /*peak=*/false);
}

void reset_peak_device_bytes(const c10::Device& device) {
  run_device_peak.before_reset(allocated_stat(device, /*peak=*/true));
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(device.index());
#endif
  (void)device;
}

std::string version_report(const std::string& tool_version) {
  std::ostringstream os;
  os << "omni-generate " << tool_version << "\n";
  os << "LibTorch " << TORCH_VERSION_MAJOR << "." << TORCH_VERSION_MINOR << "." << TORCH_VERSION_PATCH;
#ifdef OMNI_WITH_CUDA
  const auto& hooks = at::detail::getCUDAHooks();
  os << " with CUDA " << version_text(static_cast<int>(hooks.versionCUDART()), 1000, 10, 100);
  if (const long cudnn = hooks.versionCuDNN(); cudnn > 0)
    os << ", cuDNN " << cudnn / 10000 << "." << (cudnn / 100) % 100 << "." << cudnn % 100;
  os << "\n";
  int driver = 0, runtime = 0;
  cudaRuntimeGetVersion(&runtime);
  const bool have_driver = cudaDriverGetVersion(&driver) == cudaSuccess && driver > 0;
  cudaGetLastError();
  os << "CUDA runtime " << version_text(runtime, 1000, 10, 100) << ", driver "
     << (have_driver ? version_text(driver, 1000, 10, 100) : std::string("none")) << ", " << visible_gpu_count()
     << " GPU(s) visible\n";
#else
  os << " (CPU only)\n";
#endif
#ifdef OMNI_WITH_NCCL
  int nccl = 0;
  ncclGetVersion(&nccl);
  // NCCL >= 2.9 encodes major*10000 + minor*100 + patch.
  os << "NCCL " << nccl / 10000 << "." << (nccl / 100) % 100 << "." << nccl % 100 << "\n";
#endif
  char mpi[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(mpi, &len);
  std::string mpi_text(mpi, static_cast<size_t>(len));
  if (auto nl = mpi_text.find_first_of("\r\n"); nl != std::string::npos) mpi_text.resize(nl);
  if (auto comma = mpi_text.find(','); comma != std::string::npos) mpi_text.resize(comma);  // drop build details
  os << "MPI " << mpi_text << "\n";
  return os.str();
}

}  // namespace omni::dist
