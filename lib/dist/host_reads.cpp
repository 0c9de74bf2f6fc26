#include "dist/host_reads.h"

#include <ATen/record_function.h>
#include <c10/util/Backtrace.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "core/error.h"
#include "core/log.h"

namespace omni::dist {
namespace {

// The observer is a plain function: its state is this thread's, like the callback.
struct ThreadState {
  bool cpu = true;  // the loop computes on the CPU (reads are seen by intent, see the header)
  bool verbose = false;
  int64_t count = 0;
};
thread_local ThreadState state;

bool is_cpu_tensor(const c10::IValue& v) {
  return v.isTensor() && v.toTensor().device().is_cpu();
}

// Whether `fn` is a host read of device data (the header's rules).
bool is_host_read(const at::RecordFunction& fn) {
  const char* name = fn.name();
  const auto in = fn.inputs();
  if (std::strcmp(name, "aten::_local_scalar_dense") == 0) {
    return state.cpu || (!in.empty() && !is_cpu_tensor(in[0]));
  }
  if (state.cpu) {
    // _to_copy(self, dtype, layout, device, pin_memory, non_blocking, memory_format): a conversion that names
    // the CPU, which on a GPU run is a device-to-host copy.
    return std::strcmp(name, "aten::_to_copy") == 0 && in.size() > 3 && in[3].isDevice() && in[3].toDevice().is_cpu();
  }
  // copy_(self, src, non_blocking): the transfer itself, between host and device, waited for.
  if (std::strcmp(name, "aten::copy_") != 0 || in.size() < 2 || !in[0].isTensor() || !in[1].isTensor()) return false;
  const bool blocking = in.size() < 3 || !in[2].isBool() || !in[2].toBool();
  return blocking && is_cpu_tensor(in[0]) != is_cpu_tensor(in[1]);
}

std::unique_ptr<at::ObserverContext> on_operator(const at::RecordFunction& fn) {
  if (is_host_read(fn)) {
    ++state.count;
    if (state.verbose) OMNI_WARN("host read ", state.count, ": ", fn.name(), "\n", c10::get_backtrace(2, 24));
  }
  return nullptr;
}

}  // namespace

bool HostReadCounter::enabled() {
  const char* v = std::getenv("OMNI_COUNT_HOST_READS");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

HostReadCounter::HostReadCounter(const c10::Device& device) {
  if (!enabled()) return;
  state = ThreadState{device.is_cpu(), std::strcmp(std::getenv("OMNI_COUNT_HOST_READS"), "2") == 0, 0};
  handle_ = at::addThreadLocalCallback(
      at::RecordFunctionCallback(&on_operator).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
}

HostReadCounter::~HostReadCounter() {
  if (handle_ != 0) at::removeCallback(handle_);
}

int64_t HostReadCounter::count() const {
  return handle_ != 0 ? state.count : 0;
}

at::Tensor upload(const at::Tensor& host, const c10::Device& device) {
  if (!device.is_cuda() || !host.is_cpu()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

}  // namespace omni::dist
