// Rank-aware logging: [time level rank/world] prefix; info and debug from rank 0 only, warnings and
// errors from every rank, all to stderr. The level is checked before the message is formatted.
#pragma once

#include <string>

#include "core/error.h"

namespace omni::log {

enum class Level : int { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

void set_rank(int rank, int world);
void set_level(Level level);
// "debug", "info", "warn"/"warning", "error", "off"; throws a usage error naming --log-level otherwise.
Level parse_level(const std::string& name);
bool enabled(Level level);  // level passes the threshold and, for info/debug, this is rank 0
void write(Level level, const std::string& message);
// Prints on every rank regardless of the rank filter (used for per-rank reports at info level).
void write_all_ranks(Level level, const std::string& message);
// Prints on rank 0 only, at any level: a warning about an input that every rank reads alike.
void write_rank0(Level level, const std::string& message);

}  // namespace omni::log

#define OMNI_LOG_AT(lvl, ...)                                                             \
  do {                                                                                    \
    if (::omni::log::enabled(lvl)) ::omni::log::write(lvl, ::omni::str_cat(__VA_ARGS__)); \
  } while (0)
#define OMNI_DEBUG(...) OMNI_LOG_AT(::omni::log::Level::kDebug, __VA_ARGS__)
#define OMNI_INFO(...) OMNI_LOG_AT(::omni::log::Level::kInfo, __VA_ARGS__)
#define OMNI_WARN(...) OMNI_LOG_AT(::omni::log::Level::kWarn, __VA_ARGS__)
