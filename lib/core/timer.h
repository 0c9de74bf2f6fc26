// Wall-clock timers and a named phase table for the run report (device time: core/device_clock.h).
#pragma once

#include <chrono>
#include <map>
#include <string>

#include "core/device_clock.h"

namespace omni {

class Timer {
 public:
  Timer() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  void reset() { start_ = std::chrono::steady_clock::now(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Accumulates seconds per phase ("load", "denoise", ...); ScopedPhase adds its lifetime to one.
class PhaseTimes {
 public:
  void add(const std::string& phase, double seconds) { seconds_[phase] += seconds; }
  const std::map<std::string, double>& all() const { return seconds_; }
  double get(const std::string& phase) const {
    auto it = seconds_.find(phase);
    return it == seconds_.end() ? 0.0 : it->second;
  }

 private:
  std::map<std::string, double> seconds_;
};

// On a GPU `device`, the phase ends when the device has finished the work it queued (one synchronization per
// phase, so that the report's seconds are the device's, not the host's time to queue kernels).
class ScopedPhase {
 public:
  ScopedPhase(PhaseTimes& times, std::string phase, c10::Device device = c10::Device(c10::kCPU))
      : times_(times), phase_(std::move(phase)), device_(device) {}
  ~ScopedPhase() {
    try {
      device_synchronize(device_);
    } catch (...) {  // a failing device is reported by whatever runs next
    }
    times_.add(phase_, timer_.seconds());
  }
  double seconds() const { return timer_.seconds(); }  // so far

 private:
  PhaseTimes& times_;
  std::string phase_;
  c10::Device device_;
  Timer timer_;
};

}  // namespace omni
