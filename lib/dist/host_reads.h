// Counts the host's reads of device data: the points where the host thread waits for the device's queue to
// drain, which a denoising loop must not have (issue 38: "the loop never waits").
//
// An ATen observer on this thread sees every operator; it counts
//   - aten::_local_scalar_dense (Tensor::item, a scalar read);
//   - aten::_to_copy and aten::copy_ that move data between the host and the device without non_blocking (a
//     device-to-host copy waits for the queue; a pageable host-to-device copy waits for it too).
// On a CPU run host and device are the same memory, so what a GPU run would count is seen by intent instead:
// every scalar read, and every conversion that names the CPU as its target. An upload to the compute device is
// a no-op there and is not seen; the GPU run of the same check sees it.
//
// Counting is off unless OMNI_COUNT_HOST_READS is set (1: count; 2: also log each read with its stack), so a
// normal run pays nothing for the observer.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstdint>

namespace omni::dist {

class HostReadCounter {
 public:
  // Counts on this thread while alive, when enabled(); `device`: the loop's compute device.
  explicit HostReadCounter(const c10::Device& device);
  ~HostReadCounter();
  HostReadCounter(const HostReadCounter&) = delete;
  HostReadCounter& operator=(const HostReadCounter&) = delete;

  static bool enabled();  // OMNI_COUNT_HOST_READS is set and not 0
  bool active() const { return handle_ != 0; }
  int64_t count() const;  // reads seen since construction; 0 when not active

 private:
  uint64_t handle_ = 0;  // at::CallbackHandle; 0: not counting
};

// `host` on `device` without waiting: to a GPU through pinned memory, queued on the current stream (the host
// may free or reuse `host` at once: the pinned copy is LibTorch's and lives until the copy is done).
at::Tensor upload(const at::Tensor& host, const c10::Device& device);

}  // namespace omni::dist
