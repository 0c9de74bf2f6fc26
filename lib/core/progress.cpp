#include "core/progress.h"

#include <unistd.h>

#include <cstdio>

#include "core/log.h"

namespace omni {

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
    OMNI_INFO(label_, " step ", done, "/", total_, " (", detail, ") ", seconds, " s; eta ", eta, " s");
    return;
  }
  const int width = 30;
  const int filled = total_ > 0 ? done * width / total_ : width;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %d/%d %-13s %.2f s/step, eta %.0f s   ", label_.c_str(), bar.c_str(), done, total_,
               detail.c_str(), per_step, eta);
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
