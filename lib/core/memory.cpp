#include "core/memory.h"

#include <ATen/ATen.h>
#include <c10/core/Event.h>
#include <c10/core/impl/VirtualGuardImpl.h>
#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>

#include "core/error.h"
#include "core/log.h"

namespace omni {

void keep_freed_host_memory() {
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHostHeapMaxAllocation));  // the largest glibc accepts on 64-bit
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TOP_PAD, 64 << 20);
}

void return_freed_host_memory() {
  malloc_trim(0);
}

namespace {
// ru_maxrss reads the kernel's mark, which reset_peak_rss lowers: the whole run's peak is kept here.
RunPeak run_rss_peak;
int64_t max_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports kilobytes
}
}  // namespace

int64_t peak_rss_bytes() {
  return run_rss_peak.read(max_rss_bytes());
}

void reset_peak_rss() {
  run_rss_peak.before_reset(max_rss_bytes());
  FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return;
  std::fputs("5", f);  // "reset the peak resident set size to the current one" (proc(5))
  std::fclose(f);
}

namespace {
// The "<key>: N kB" line of a /proc file (status, meminfo) in bytes; 0 when absent.
int64_t proc_kib_line(const char* path, const char* format) {
  FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[256];
  int64_t kib = 0;
  while (std::fgets(line, sizeof(line), f))
    if (std::sscanf(line, format, &kib) == 1) break;
  std::fclose(f);
  return kib * 1024;
}
}  // namespace

int64_t peak_rss_since_reset_bytes() {
  return proc_kib_line("/proc/self/status", "VmHWM: %ld kB");
}

int64_t host_memory_bytes() {
  return proc_kib_line("/proc/meminfo", "MemTotal: %ld kB");
}

int64_t current_rss_bytes() {
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  long pages_total = 0, pages_resident = 0;
  int n = std::fscanf(f, "%ld %ld", &pages_total, &pages_resident);
  std::fclose(f);
  if (n != 2) return 0;
  return static_cast<int64_t>(pages_resident) * sysconf(_SC_PAGESIZE);
}

std::string format_bytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0)
    std::snprintf(buf, sizeof(buf), "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(buf, sizeof(buf), "%.2f %s", v, units[u]);
  return buf;
}

}  // namespace omni

namespace omni {

namespace {
// Staged pieces start at multiples of this (DMA engines read aligned sources fastest).
constexpr int64_t kStagingAlign = 512;

at::Tensor pinned_staging(int64_t bytes) {
  return at::empty({bytes}, at::TensorOptions().dtype(at::kByte).pinned_memory(true));
}

// A tensor's bytes as a flat uint8 view ([numel * element_size]); `t` must be contiguous.
at::Tensor bytes_of(const at::Tensor& t) {
  return t.reshape({-1}).view(at::kByte);
}
}  // namespace

struct HostToDevice::State {
  at::Device device;
  int64_t staging_bytes;
  StagingAllocator allocator;
  bool tried = false;  // the staging buffer was asked for (once)
  at::Tensor staging;  // [2 * half] uint8 host memory; undefined: plain copies
  int64_t half = 0;    // bytes per half
  int current = 0;     // the half being filled
  int64_t used = 0;    // bytes of the current half taken
  // Per half: the event recorded after its copies (device work only; CPU copies are synchronous) and whether
  // copies were issued since it was last recorded / waited for.
  std::optional<c10::Event> events[2];
  bool unrecorded[2] = {false, false};
  bool recorded[2] = {false, false};
  int64_t copies = 0, switches = 0;

  State(at::Device d, int64_t bytes, StagingAllocator alloc)
      : device(d), staging_bytes(bytes), allocator(std::move(alloc)) {}

  bool has_events() const { return !device.is_cpu(); }

  void record(int h) {
    if (!unrecorded[h]) return;
    unrecorded[h] = false;
    if (!has_events()) return;
    if (!events[h]) events[h].emplace(device.type());
    events[h]->record(c10::impl::VirtualGuardImpl(device.type()).getStream(device));
    recorded[h] = true;
  }
  void wait(int h) {
    record(h);
    if (recorded[h]) events[h]->synchronize();
    recorded[h] = false;
  }

  // Allocates the staging buffer on the first upload; false when uploads are plain copies.
  bool ready() {
    if (tried) return staging.defined();
    tried = true;
    if (!allocator && !device.is_cuda()) return false;  // the CPU needs no copy; other devices: plain copies
    const int64_t half_bytes = staging_bytes / 2 / kStagingAlign * kStagingAlign;
    OMNI_CHECK(half_bytes > 0, "HostToDevice: a staging buffer of ", staging_bytes, " bytes is too small");
    try {
      if (has_events() && !device.has_index())  // the stream and the events need the device's index
        device = c10::impl::VirtualGuardImpl(device.type()).getDevice();
      staging = allocator ? allocator(2 * half_bytes) : pinned_staging(2 * half_bytes);
    } catch (const std::exception& e) {
      OMNI_DEBUG("no pinned staging buffer for uploads to ", device.str(), " (", e.what(), "); plain copies");
      staging = at::Tensor();
      return false;
    }
    OMNI_CHECK(staging.defined() && staging.is_cpu() && staging.scalar_type() == at::kByte && staging.is_contiguous() &&
                   staging.numel() >= 2 * half_bytes,
               "HostToDevice: the staging allocator must return ", 2 * half_bytes, " contiguous uint8 host bytes");
    half = half_bytes;
    return true;
  }
};

HostToDevice::HostToDevice(at::Device device, int64_t staging_bytes, StagingAllocator allocator)
    : state_(std::make_unique<State>(device, staging_bytes, std::move(allocator))) {}

HostToDevice::~HostToDevice() {
  try {
    synchronize();
  } catch (const std::exception& e) {
    OMNI_WARN("waiting for host-to-device copies failed: ", e.what());
  }
}

at::Tensor HostToDevice::upload(const at::Tensor& host) {
  State& s = *state_;
  if (!host.is_cpu()) return host.to(s.device);
  if (!s.ready()) return s.device.is_cpu() ? host : host.to(s.device);
  const at::Tensor src = host.contiguous();
  at::Tensor dst = at::empty(src.sizes(), at::TensorOptions().dtype(src.scalar_type()).device(s.device));
  if (src.numel() == 0) return dst;
  const at::Tensor from = bytes_of(src), to = bytes_of(dst);
  const int64_t total = from.numel();
  for (int64_t offset = 0; offset < total;) {
    if (s.used >= s.half) {
      // The current half is full: its copies get their event, and the other half is refilled once the copies
      // that read it are done.
      s.record(s.current);
      s.current ^= 1;
      s.used = 0;
      s.wait(s.current);
      ++s.switches;
    }
    const int64_t n = std::min(total - offset, s.half - s.used);
    at::Tensor piece = s.staging.narrow(0, s.current * s.half + s.used, n);
    piece.copy_(from.narrow(0, offset, n));
    to.narrow(0, offset, n).copy_(piece, /*non_blocking=*/true);
    s.unrecorded[s.current] = true;
    ++s.copies;
    offset += n;
    s.used = std::min(s.half, (s.used + n + kStagingAlign - 1) / kStagingAlign * kStagingAlign);
  }
  return dst;
}

void HostToDevice::synchronize() {
  State& s = *state_;
  if (!s.staging.defined()) return;
  s.wait(0);
  s.wait(1);
}

bool HostToDevice::staged() const {
  return state_->staging.defined();
}
int64_t HostToDevice::staged_copies() const {
  return state_->copies;
}
int64_t HostToDevice::half_switches() const {
  return state_->switches;
}

}  // namespace omni
