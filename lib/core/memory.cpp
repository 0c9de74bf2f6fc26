#include "core/memory.h"

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>

namespace omni {

void keep_freed_host_memory() {
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHostHeapMaxAllocation));  // the largest glibc accepts on 64-bit
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TOP_PAD, 64 << 20);
}

namespace {
// The process's high-water mark before the last reset_peak_rss(): the reset lowers the kernel's mark, which
// getrusage's ru_maxrss reads too, so the whole run's peak must be kept here.
int64_t peak_before_reset = 0;
}  // namespace

int64_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return std::max(peak_before_reset, static_cast<int64_t>(usage.ru_maxrss) * 1024);  // Linux reports kilobytes
}

void reset_peak_rss() {
  peak_before_reset = peak_rss_bytes();
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
