// How the owner of an NCCL communicator lets it go, and what a CUDA event query means for the watchdog: the
// decisions only, as plain functions over callables and error codes, so that they are tested without a GPU
// (tests/dist/nccl_teardown_test.cpp) and ProcessGroupNccl runs exactly the tested code.
//
// A rank that fails on its own (out of memory, a bad input) unwinds while its peers wait in a collective it
// will never join. Draining its communication stream or ncclCommDestroy would wait for them forever (until
// --collective-timeout), so on an error path the communicator is aborted instead, like PyTorch c10d's
// ProcessGroupNCCL::abort(): ncclCommAbort stops its kernels without any peer.
#pragma once

#include <functional>

#ifdef OMNI_WITH_NCCL
#include <cuda_runtime_api.h>
#endif

#include "dist/watchdog.h"

namespace omni::dist {

// The steps of releasing one communicator and its CUDA resources; an empty step is skipped.
struct CommTeardownSteps {
  std::function<void()> sync_stream;   // cudaStreamSynchronize of the communication stream: waits for peers
  std::function<void()> destroy_comm;  // ncclCommDestroy: flushes outstanding work, waits for peers
  std::function<void()> abort_comm;    // ncclCommAbort: stops the communicator's kernels, waits for nobody
  std::function<void()> free_memory;   // cudaFree: synchronizes the whole device, so waits for peers too
  std::function<void()> release;       // cudaEventDestroy / cudaStreamDestroy: never block
};

// Whether a destructor runs on an error path: an exception is unwinding through it
// (std::uncaught_exceptions() > 0), or the process is going down on an error (dist::failing()).
bool tearing_down_on_error() noexcept;

// Releases a communicator:
//   normal:   sync_stream, destroy_comm, free_memory, release;
//   on_error: abort_comm, release (nothing that waits for a peer; the device memory goes with the process).
// `comm_alive` false: the communicator was already aborted (the watchdog's abort hook ran) and is freed, so it
// is neither destroyed nor aborted again.
void tear_down_communicator(const CommTeardownSteps& steps, bool on_error, bool comm_alive = true) noexcept;

#ifdef OMNI_WITH_NCCL
// cudaEventQuery's answer on a collective's completion event: kDone, kPending (cudaErrorNotReady), kExiting
// when the CUDA runtime or context is being torn down at process exit (cudaErrorCudartUnloading,
// cudaErrorContextIsDestroyed: not the collective's fault), kFailed for any other error.
PollResult classify_event_query(cudaError_t rc) noexcept;
#endif

}  // namespace omni::dist
