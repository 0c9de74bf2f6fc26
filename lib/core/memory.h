// Process memory figures for the run report, and the pinned staging that uploads host tensors to a device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace omni {

// A whole-run peak read off a counter whose peak a phase resets for its own figure (the kernel's VmHWM, CUDA's
// allocator peak): the peak seen before each reset is kept, so the run's peak is never the last phase's alone.
class RunPeak {
 public:
  // The run's peak, given the counter's peak since its last reset.
  int64_t read(int64_t counter_peak) const { return counter_peak > before_reset_ ? counter_peak : before_reset_; }
  // Call with the counter's peak right before resetting it.
  void before_reset(int64_t counter_peak) { before_reset_ = read(counter_peak); }

 private:
  int64_t before_reset_ = 0;
};

// Peak resident set size of this process in bytes over the whole run (getrusage ru_maxrss, and the peaks
// before any reset_peak_rss()).
int64_t peak_rss_bytes();
// Current resident set size in bytes (/proc/self/statm), 0 where unavailable.
int64_t current_rss_bytes();
// A phase's own host peak: reset_peak_rss() sets the kernel's high-water mark (VmHWM) to the current resident
// size; peak_rss_since_reset_bytes() reads it. Memory the process already held and reuses (freed blocks that
// the allocator keeps) is not counted, so this is a lower bound of the phase's working memory.
void reset_peak_rss();
int64_t peak_rss_since_reset_bytes();
// The machine's physical memory (MemTotal), 0 where unavailable.
int64_t host_memory_bytes();
// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(int64_t bytes);

// Keeps freed host memory in the process for reuse. Every transformer block allocates and frees activations
// of tens of MiB; with glibc's defaults each such block goes back to the kernel (munmap, heap trim) and the
// next one page-faults its way in again (~5% of a CPU denoising step, ~12% of a VAE decode). Blocks up to
// 32 MiB (glibc's maximum) come from the heap, whose top is never trimmed. Call once at start-up.
void keep_freed_host_memory();
// The largest allocation keep_freed_host_memory() serves from the heap (larger ones are mapped and unmapped).
constexpr int64_t kHostHeapMaxAllocation = int64_t{32} << 20;
// Gives the free pages that keep_freed_host_memory() keeps back to the kernel (glibc's malloc_trim). Loading
// calls it after each HSDP unit: a unit's read buffers are not needed again, and kept, how much of them the
// next unit reuses depends on the sizes this rank's slices happen to have (up to ~15% of the load's peak,
// differing from run to run and rank to rank). Trimmed, what a rank holds after each unit is its slices, as
// the memory plan's load phase counts them.
void return_freed_host_memory();

// Copies host tensors to a device through a reusable page-locked (pinned) staging buffer: each tensor's bytes
// are copied on the host into one half of the buffer, then to the device asynchronously (non_blocking) while
// the host fills the other half; before a half is refilled, an event recorded after its copies is waited for.
// A pageable tensor's .to(device) instead has the driver stage it through its own small pinned buffer, copy by
// copy, with the host waiting for each. The tensors it returns are ordered on the device's current stream
// like any other work there; synchronize() (and the destructor) wait until the staging buffer is no longer read.
// Where pinned memory cannot be had (no usable CUDA), upload() falls back to plain copies.
class HostToDevice {
 public:
  // Returns `bytes` of host staging memory as a 1-D uint8 CPU tensor. The default allocates pinned memory.
  using StagingAllocator = std::function<at::Tensor(int64_t bytes)>;
  static constexpr int64_t kDefaultStagingBytes = int64_t{64} << 20;  // two 32 MiB halves

  // `device` cpu: upload() returns its argument (nothing to copy) unless an `allocator` is given, which makes
  // every upload go through the staging path on any device (the tests run its chunking on the CPU). A CUDA
  // device: pinned staging of `staging_bytes`, allocated on the first upload.
  explicit HostToDevice(at::Device device, int64_t staging_bytes = kDefaultStagingBytes,
                        StagingAllocator allocator = nullptr);
  ~HostToDevice();  // synchronize(), errors logged
  HostToDevice(const HostToDevice&) = delete;
  HostToDevice& operator=(const HostToDevice&) = delete;

  // `host` (any dtype and shape, contiguous or not) as a contiguous tensor on the device, the same values
  // bit for bit. A tensor that is not on the host is moved with a plain .to(device).
  at::Tensor upload(const at::Tensor& host);
  // Waits for every copy still reading the staging buffer.
  void synchronize();

  // Whether uploads go through the staging buffer (false before the first upload and on the plain fallback).
  bool staged() const;
  // Copies from the staging buffer to the device so far (a tensor larger than the free space takes several).
  int64_t staged_copies() const;
  // Times the host waited for a half of the buffer, or would have on the CPU (it switched halves).
  int64_t half_switches() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace omni
