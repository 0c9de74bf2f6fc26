#include "core/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace omni::log {
namespace {
int g_rank = 0;
int g_world = 1;
Level g_level = Level::kInfo;

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarn:
      return "warn";
    case Level::kError:
      return "error";
    default:
      return "";
  }
}

void emit(Level level, const std::string& message) {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  int ms =
      static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
  // One fprintf per line so that lines from different ranks do not interleave mid-line.
  std::fprintf(stderr, "[%s.%03d %s %d/%d] %s\n", stamp, ms, level_name(level), g_rank, g_world, message.c_str());
  std::fflush(stderr);
}
}  // namespace

void set_rank(int rank, int world) {
  g_rank = rank;
  g_world = world;
}
void set_level(Level level) {
  g_level = level;
}

Level parse_level(const std::string& name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warn" || name == "warning") return Level::kWarn;
  if (name == "error") return Level::kError;
  if (name == "off") return Level::kOff;
  OMNI_FAIL_USAGE("--log-level: expected one of debug, info, warn, error, off; got '", name, "'");
}

bool enabled(Level level) {
  if (level < g_level) return false;
  if (level <= Level::kInfo && g_rank != 0) return false;
  return true;
}

void write(Level level, const std::string& message) {
  emit(level, message);
}
void write_all_ranks(Level level, const std::string& message) {
  if (level >= g_level) emit(level, message);
}
void write_rank0(Level level, const std::string& message) {
  if (level >= g_level && g_rank == 0) emit(level, message);
}

}  // namespace omni::log
