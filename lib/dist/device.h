// The device each rank computes on (--device), and what this build and machine offer (--version).
//
// --device auto (the default) is CUDA when this LibTorch has CUDA and a GPU is visible, else the CPU. CUDA
// ranks take GPU (node-local rank % visible GPUs), so `mpirun -np 8` on an 8-GPU node or srun with one GPU per
// task (CUDA_VISIBLE_DEVICES set per task) gives every rank its own GPU without further flags. The chosen GPU
// is made current before anything else touches CUDA, so no rank creates a context on another rank's GPU.
#pragma once

#include <c10/core/Device.h>

#include <cstdint>
#include <string>

#include "dist/communicator.h"

namespace omni::dist {

// --device: auto (CUDA when this LibTorch has CUDA and a GPU is visible, else the CPU), cpu, cuda (GPU local
// rank % visible GPUs) or cuda:N. Not a c10::Device: "auto" and "cuda without an index" are resolved per rank
// by dist::select_device.
struct DeviceRequest {
  enum Kind { kAuto, kCpu, kCuda };
  Kind kind = kAuto;
  int index = -1;  // cuda:N; -1: chosen from the local rank
  // "auto", "cpu", "cuda", "cuda:N".
  std::string str() const;
  // Usage error naming `where` ("--device") unless `v` is one of the forms above.
  static DeviceRequest parse(const std::string& v, const std::string& where);
};

// GPUs this process can use: 0 when LibTorch has no CUDA, no driver is loaded, or none is visible.
int visible_gpu_count();

// How LibTorch computes float32 matrix products (cuBLAS) and convolutions (cuDNN) on CUDA, process-wide. TF32
// tensor cores round inputs to 10 mantissa bits. Set before the first kernel runs. No effect on the CPU.
enum class Float32Math {
  // LibTorch's own default, which diffusers and Wan2.2 run with: products IEEE float32, cuDNN convolutions TF32.
  // A float32 VAE decode at 720p takes 8.6 s on an H200 so, 72 s in IEEE float32 (tools/gpu/README.md).
  kTorchDefault,
  kTf32,  // products and convolutions on TF32 tensor cores (--tf32)
  kIeee,  // IEEE float32 throughout (--exact-float32): float32 means float32
};
void set_float32_math(Float32Math math);
// What LibTorch will do now: "ieee", "tf32", or "matmul <x>, conv <y>" when they differ (for the report).
std::string float32_math();
// The CPU kernels LibTorch runs: ATen's vectorized level ("AVX512", "AVX2", "DEFAULT"; ATEN_CPU_CAPABILITY caps
// it), and oneDNN's cap when ONEDNN_MAX_CPU_ISA sets one. GEMM and elementwise kernels differ between levels in
// their last bits, so a comparison of runs names it (the report).
std::string cpu_kernels();

// Collective over `world`; call it on every rank with the same arguments (from an agreed phase: it throws
// a usage error on the ranks that cannot honour the request, after the collective). A CUDA device is made current on
// return. Two ranks of one node on the same physical GPU (same UUID, whatever CUDA_VISIBLE_DEVICES says) are a usage
// error naming both, unless `allow_shared_gpu`.
c10::Device select_device(const DeviceRequest& spec, const Communicator& world, bool allow_shared_gpu);

// Whether --device `spec` runs on a GPU here (select_device's answer, without its collective or a CUDA context):
// not cpu, and a GPU visible. cuda with none visible is select_device's error.
bool runs_on_cuda(const DeviceRequest& spec);

// The memory one rank may plan with under --device `spec`, read without creating a
// CUDA context: on a GPU its total memory (split between the node's ranks that would share it), on the CPU the
// node's physical memory split between the node's ranks. `what` says which ("GPU 0 (NVIDIA H200): 139.8 GiB",
// "host memory 23.4 GiB / 2 ranks on this node"). bytes 0: unknown. Collective over `world` (node ranks).
struct MemoryBudget {
  int64_t bytes = 0;
  std::string what;
  std::string product;  // the GPU's name as CUDA gives it ("NVIDIA H200"); empty on the CPU
};
MemoryBudget memory_budget(const DeviceRequest& spec, const Communicator& world);
// Peak bytes LibTorch's caching allocator had allocated on `device` over the whole run, the peaks before
// every reset_peak_device_bytes included (0 for the CPU).
int64_t peak_device_bytes(const c10::Device& device);
// A phase's own device peak: reset_peak_device_bytes sets the allocator's peak to what is allocated now (the
// run's peak is kept), peak_device_bytes_since_reset reads it (0 on the CPU).
void reset_peak_device_bytes(const c10::Device& device);
int64_t peak_device_bytes_since_reset(const c10::Device& device);
int64_t allocated_device_bytes(const c10::Device& device);

// Versions of the tool and everything it runs on, one per line: omni-generate, LibTorch (and its CUDA,
// cuDNN), the CUDA driver and runtime, NCCL, the MPI library. Needs MPI initialized. Local (no collective).
std::string version_report(const std::string& tool_version);

}  // namespace omni::dist
