#include "core/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "core/log.h"

namespace omni {

std::string format_duration(double seconds) {
  char buf[64];
  if (!(seconds > 0)) return "0 s";  // zero, negative or NaN
  if (seconds < 0.01) return "< 0.01 s";
  if (seconds < 10) {
    std::snprintf(buf, sizeof(buf), "%.2f s", seconds);
  } else if (seconds < 90) {
    std::snprintf(buf, sizeof(buf), "%.1f s", seconds);
  } else if (seconds < 5400) {  // up to 90 minutes: minutes and seconds
    const long s = std::lround(seconds);
    std::snprintf(buf, sizeof(buf), "%ld min %ld s", s / 60, s % 60);
  } else {
    const long m = std::lround(seconds / 60);
    std::snprintf(buf, sizeof(buf), "%ld h %ld min", m / 60, m % 60);
  }
  return buf;
}

Progress::Progress(std::string label, int total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled), tty_(isatty(fileno(stderr)) != 0) {}

Progress::~Progress() {
  finish();
}

void Progress::update(int done, double seconds, const std::string& detail) {
  if (!enabled_) return;
  elapsed_ += seconds;
  const double per_step = done > 0 ? elapsed_ / done : 0.0;
  const double eta = per_step * (total_ - done);
  if (!tty_) {
    OMNI_INFO(label_, " step ", done, "/", total_, " (", detail, ") ", format_duration(seconds), "; eta ",
              format_duration(eta));
    return;
  }
  const int width = 30;
  const int filled = total_ > 0 ? done * width / total_ : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %d/%d %-13s %.2f s/step, eta %-12s", label_.c_str(), bar.c_str(), done, total_,
               detail.c_str(), per_step, format_duration(eta).c_str());
  std::fflush(stderr);
  open_ = true;
}

void Progress::finish() {
  if (open_) {
    std::fputc('\n', stderr);
    std::fflush(stderr);
    open_ = false;
  }
}

}  // namespace omni
