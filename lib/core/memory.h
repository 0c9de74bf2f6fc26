// Process memory figures for the run report.
#pragma once

#include <cstdint>
#include <string>

namespace omni {

// Peak resident set size of this process in bytes (getrusage ru_maxrss).
int64_t peak_rss_bytes();
// Current resident set size in bytes (/proc/self/statm), 0 where unavailable.
int64_t current_rss_bytes();
// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(int64_t bytes);

}  // namespace omni
