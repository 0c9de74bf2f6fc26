// Time of the work queued on a device. On a CUDA device the host only queues kernels and returns, so host
// clocks read ~0 for GPU work: there a mark is a CUDA event recorded on the current stream and an interval
// is read from two events (blocking, if at all, only until the later mark has been reached). On the CPU a
// mark is a host clock reading. The same code then times both.
#pragma once

#include <c10/core/Device.h>

#include <chrono>
#include <memory>

namespace omni {

class DeviceClock {
 public:
  class Mark;
  using MarkPtr = std::shared_ptr<Mark>;

  explicit DeviceClock(const c10::Device& device) : device_(device) {}

  // A point in the device's queue of work: everything queued before it.
  MarkPtr mark() const;

  // Whether the device has reached `m` (never blocks).
  static bool reached(const MarkPtr& m);
  // Seconds of device time from `from` to `to`; blocks until `to` is reached.
  static double seconds(const MarkPtr& from, const MarkPtr& to);

  const c10::Device& device() const { return device_; }

 private:
  c10::Device device_;
};

// Blocks until all work queued on `device` is done (no-op on the CPU). For phase boundaries, so that a
// phase's host time includes its device work; never inside the denoising loop.
void device_synchronize(const c10::Device& device);

}  // namespace omni
