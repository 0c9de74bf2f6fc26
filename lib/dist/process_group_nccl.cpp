#ifdef OMNI_WITH_NCCL

#include "dist/process_group_nccl.h"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>

#include <cstdlib>
#include <memory>
#include <sstream>
#include <thread>

#include "core/dtype.h"
#include "core/error.h"
#include "dist/mpi_check.h"
#include "dist/nccl_teardown.h"
#include "dist/watchdog.h"

namespace omni::dist {
namespace {

ncclDataType_t nccl_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return ncclFloat32;
    case at::kDouble:
      return ncclFloat64;
    case at::kBFloat16:
      return ncclBfloat16;
    case at::kHalf:
      return ncclFloat16;
    case at::kLong:
      return ncclInt64;
    case at::kInt:
      return ncclInt32;
    case at::kChar:
      return ncclInt8;
    case at::kByte:
    case at::kBool:
    case at::kFloat8_e4m3fn:  // gathered as bytes
      return ncclUint8;
    default:
      OMNI_FAIL("no NCCL datatype for ", t);
  }
}

// Makes `device` current for the calls in scope, restoring the caller's device after.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) CUDA_CHECK(cudaSetDevice(device));
  }
  ~DeviceGuard() { cudaSetDevice(previous_); }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
};

char* bytes(const at::Tensor& t) {
  return static_cast<char*>(t.data_ptr());
}

// The completion event of one collective, shared by its Work and the watchdog (either may outlive the other).
struct PendingEvent {
  int device = 0;
  cudaEvent_t event = nullptr;
  ncclComm_t comm = nullptr;
  PendingEvent(int d, cudaEvent_t e, ncclComm_t c) : device(d), event(e), comm(c) {}
  ~PendingEvent() { cudaEventDestroy(event); }  // released once the event completes
  PendingEvent(const PendingEvent&) = delete;
  PendingEvent& operator=(const PendingEvent&) = delete;

  // For the watchdog thread: done, still running, failed (the event's error, or NCCL's asynchronous one), or
  // the process is exiting (the CUDA runtime unloads; the communicator may be gone, so it is not queried).
  PollResult poll(std::string* why) const {
    cudaSetDevice(device);
    const cudaError_t rc = cudaEventQuery(event);
    const PollResult state = classify_event_query(rc);
    if (state == PollResult::kFailed) *why = str_cat("CUDA: ", cudaGetErrorName(rc), ": ", cudaGetErrorString(rc));
    if (state != PollResult::kPending) return state;
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
      *why = str_cat("NCCL: ", ncclGetErrorString(async));
      return PollResult::kFailed;
    }
    return PollResult::kPending;
  }
};

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<PendingEvent> pending, cudaStream_t compute, std::vector<at::Tensor> keep, bool host_sync)
      : pending_(std::move(pending)), compute_(compute), keep_(std::move(keep)), host_sync_(host_sync) {}
  ~NcclWork() override {
    // Even a dropped handle orders the compute stream after the transfer, so that memory the caller frees
    // next is not reused by kernels racing the collective.
    // No throwing here; the device is set by hand because a null compute stream means this device's one.
    if (waited_) return;
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(pending_->device);
    cudaStreamWaitEvent(compute_, pending_->event, 0);
    cudaSetDevice(previous);
  }

  void wait() override {
    if (host_sync_) return synchronize();
    if (waited_) return;
    DeviceGuard guard(pending_->device);
    CUDA_CHECK(cudaStreamWaitEvent(compute_, pending_->event, 0));
    waited_ = true;
    // The compute stream is now ordered after the transfer; a caching allocator reusing these buffers on it
    // is safe, so the references can go.
    keep_.clear();
  }
  bool is_completed() override {
    DeviceGuard guard(pending_->device);
    std::string why;
    const PollResult r = pending_->poll(&why);
    OMNI_CHECK(r != PollResult::kFailed, "NCCL collective failed: ", why);
    // kExiting: the CUDA runtime is unloading; there is nothing left to wait for.
    return r != PollResult::kPending;
  }
  void synchronize() override {
    DeviceGuard guard(pending_->device);
    // Poll rather than cudaEventSynchronize so that an asynchronous NCCL failure ends the wait here; a
    // collective that never ends is the watchdog's (--collective-timeout).
    while (!is_completed()) std::this_thread::yield();
    if (!waited_) CUDA_CHECK(cudaStreamWaitEvent(compute_, pending_->event, 0));
    waited_ = true;
    keep_.clear();
  }

 private:
  std::shared_ptr<PendingEvent> pending_;
  cudaStream_t compute_;
  std::vector<at::Tensor> keep_;
  bool host_sync_;
  bool waited_ = false;
};

}  // namespace

ProcessGroupNccl::ProcessGroupNccl(const Communicator& comm, at::Device device, const std::string& name)
    : ProcessGroup(comm, name), comm_(comm.dup()) {
  OMNI_CHECK(device.is_cuda(), "ProcessGroupNccl needs a CUDA device, got ", device);
  if (device.has_index()) {
    device_index_ = device.index();
  } else {
    CUDA_CHECK(cudaGetDevice(&device_index_));
  }
  DeviceGuard guard(device_index_);
  // Connections made when the communicator is created, not lazily at its first collective (NCCL >= 2.22's
  // default): the HSDP prefetch gather on one communicator overlaps the Ulysses and ring all-to-alls on
  // another, and two communicators setting up connections at once can hang (step 0's known symptom). A value
  // the user set is kept.
  setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
  ncclUniqueId id{};
  if (rank() == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm_.comm()));
  NCCL_CHECK(ncclCommInitRank(&nccl_, size(), id, rank()));
  // The highest priority lets a gather's kernels start as soon as an SM frees up, ahead of queued compute.
  int least = 0, greatest = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  CUDA_CHECK(cudaStreamCreateWithPriority(&stream_, cudaStreamNonBlocking, greatest));
  CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
  CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&scratch_), sizeof(float)));
  CUDA_CHECK(cudaMemset(scratch_, 0, sizeof(float)));
  // On a failure anywhere in the process, the watchdog aborts this communicator so its kernels stop. The id
  // also tags this group's collectives, so that the destructor can stop their polling (retire_owner).
  ncclComm_t handle = nccl_;
  abort_hook_ = CollectiveWatchdog::instance().add_abort_hook([handle] { ncclCommAbort(handle); });
}

ProcessGroupNccl::~ProcessGroupNccl() {
  // No throwing here. First the watchdog lets go of the communicator: no poll of it runs from here on, and
  // false means its abort hook already ran (NCCL freed it).
  const bool comm_alive = nccl_ && (abort_hook_ < 0 || CollectiveWatchdog::instance().retire_owner(abort_hook_));
  // Decided after retire_owner: a hook that ran marked the process failing first.
  const bool on_error = tearing_down_on_error();
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_index_);
  CommTeardownSteps steps;
  steps.sync_stream = [this] {
    if (stream_) cudaStreamSynchronize(stream_);
  };
  steps.destroy_comm = [this] { ncclCommDestroy(nccl_); };
  steps.abort_comm = [this] { ncclCommAbort(nccl_); };
  steps.free_memory = [this] {
    if (scratch_) cudaFree(scratch_);
  };
  steps.release = [this] {
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
  };
  tear_down_communicator(steps, on_error, comm_alive);
  cudaSetDevice(previous);
}

cudaStream_t ProcessGroupNccl::compute_stream() const {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device_index_)).stream();
}

void ProcessGroupNccl::wait_for_compute() {
  CUDA_CHECK(cudaEventRecord(ready_, compute_stream()));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
}

WorkHandle ProcessGroupNccl::finish(const char* op, const at::Tensor& data, std::vector<at::Tensor> keep,
                                    bool host_sync) {
  cudaEvent_t done = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(done, stream_));
  auto pending = std::make_shared<PendingEvent>(device_index_, done, nccl_);
  const int64_t numel = data.defined() ? data.numel() : 1;
  const at::ScalarType type = data.defined() ? data.scalar_type() : at::kFloat;
  CollectiveWatchdog::instance().watch(
      [op, numel, type, seq = sequence(), label = label()] {
        return str_cat("NCCL ", op, " #", seq, " of ", numel, " ", dtype_name(type), " on the ", label);
      },
      [pending](std::string* why) { return pending->poll(why); }, abort_hook_);
  return std::make_shared<NcclWork>(std::move(pending), compute_stream(), std::move(keep), host_sync);
}

WorkHandle ProcessGroupNccl::do_all_gather(const at::Tensor& output, const at::Tensor& input) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  // NCCL's in-place form is exactly the one the base class admits: input at output's own slice.
  NCCL_CHECK(ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<size_t>(input.numel()),
                           nccl_type(input.scalar_type()), nccl_, stream_));
  return finish("all_gather", input, {output, input});
}

WorkHandle ProcessGroupNccl::do_all_gather_v(const at::Tensor& output, const at::Tensor& input,
                                             const std::vector<int64_t>& counts) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  const auto type = nccl_type(input.scalar_type());
  const auto offsets = exclusive_offsets(counts);
  const int64_t es = input.element_size();
  // One broadcast per root, fused into one launch: rank r's block lands at its offset everywhere.
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < size(); ++r) {
    char* dst = bytes(output) + offsets[r] * es;
    const void* src = r == rank() ? input.data_ptr() : dst;
    NCCL_CHECK(ncclBroadcast(src, dst, static_cast<size_t>(counts[r]), type, r, nccl_, stream_));
  }
  NCCL_CHECK(ncclGroupEnd());
  return finish("all_gather_v", input, {output, input});
}

WorkHandle ProcessGroupNccl::do_all_to_all(const at::Tensor& output, const at::Tensor& input) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  const auto type = nccl_type(input.scalar_type());
  const int64_t chunk = input.numel() / size();
  const int64_t chunk_bytes = chunk * input.element_size();
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < size(); ++r) {
    NCCL_CHECK(ncclSend(bytes(input) + r * chunk_bytes, static_cast<size_t>(chunk), type, r, nccl_, stream_));
    NCCL_CHECK(ncclRecv(bytes(output) + r * chunk_bytes, static_cast<size_t>(chunk), type, r, nccl_, stream_));
  }
  NCCL_CHECK(ncclGroupEnd());
  return finish("all_to_all", input, {output, input});
}

WorkHandle ProcessGroupNccl::do_all_to_all_v(const at::Tensor& output, const at::Tensor& input,
                                             const std::vector<int64_t>& send_counts,
                                             const std::vector<int64_t>& recv_counts) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  const auto type = nccl_type(input.scalar_type());
  const int64_t es = input.element_size();
  const auto send_off = exclusive_offsets(send_counts);
  const auto recv_off = exclusive_offsets(recv_counts);
  NCCL_CHECK(ncclGroupStart());
  for (int r = 0; r < size(); ++r) {
    // Empty blocks are skipped on both sides alike, since send_counts[j] here equals recv_counts[me] on j.
    if (send_counts[r] > 0)
      NCCL_CHECK(
          ncclSend(bytes(input) + send_off[r] * es, static_cast<size_t>(send_counts[r]), type, r, nccl_, stream_));
    if (recv_counts[r] > 0)
      NCCL_CHECK(
          ncclRecv(bytes(output) + recv_off[r] * es, static_cast<size_t>(recv_counts[r]), type, r, nccl_, stream_));
  }
  NCCL_CHECK(ncclGroupEnd());
  return finish("all_to_all_v", input, {output, input});
}

WorkHandle ProcessGroupNccl::do_broadcast(const at::Tensor& tensor, int root) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), root, nccl_, stream_));
  return finish("broadcast", tensor, {tensor});
}

WorkHandle ProcessGroupNccl::do_all_reduce(const at::Tensor& tensor, ReduceOp op) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), op == ReduceOp::kSum ? ncclSum : ncclMax, nccl_, stream_));
  return finish("all_reduce", tensor, {tensor});
}

WorkHandle ProcessGroupNccl::do_barrier() {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  // NCCL has no barrier: a one-element all-reduce that every rank must join, and a host-blocking wait.
  NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, nccl_, stream_));
  return finish("barrier", at::Tensor(), {}, /*host_sync=*/true);
}

}  // namespace omni::dist

#endif  // OMNI_WITH_NCCL
