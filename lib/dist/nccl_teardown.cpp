#include "dist/nccl_teardown.h"

#include <exception>

#include "dist/communicator.h"

namespace omni::dist {
namespace {

void run(const std::function<void()>& step) {
  if (step) step();
}

}  // namespace

bool tearing_down_on_error() noexcept {
  return std::uncaught_exceptions() > 0 || failing();
}

void tear_down_communicator(const CommTeardownSteps& steps, bool on_error, bool comm_alive) noexcept {
  if (on_error) {
    if (comm_alive) run(steps.abort_comm);
    run(steps.release);
    return;
  }
  // Queued collectives finish before the communicator goes (their buffers may be freed right after).
  run(steps.sync_stream);
  if (comm_alive) run(steps.destroy_comm);
  run(steps.free_memory);
  run(steps.release);
}

#ifdef OMNI_WITH_NCCL
PollResult classify_event_query(cudaError_t rc) noexcept {
  switch (rc) {
    case cudaSuccess:
      return PollResult::kDone;
    case cudaErrorNotReady:
      return PollResult::kPending;
    case cudaErrorCudartUnloading:     // the runtime unloads at exit (also the driver's "deinitialized")
    case cudaErrorContextIsDestroyed:  // the primary context went first
      return PollResult::kExiting;
    default:
      return PollResult::kFailed;
  }
}
#endif

}  // namespace omni::dist
