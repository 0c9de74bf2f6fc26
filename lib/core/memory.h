// Process memory figures for the run report.
#pragma once

#include <cstdint>
#include <string>

namespace omni {

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

}  // namespace omni
