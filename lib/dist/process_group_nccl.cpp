#ifdef OMNI_WITH_NCCL

#include "dist/process_group_nccl.h"

#include <ATen/ATen.h>

#include "core/error.h"

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

// Surfaces a failure NCCL found asynchronously (a peer died, a network error) instead of waiting forever.
void check_async(ncclComm_t comm) {
  ncclResult_t async = ncclSuccess;
  NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
  if (async != ncclSuccess && async != ncclInProgress)
    OMNI_FAIL("NCCL communicator failed asynchronously: ", ncclGetErrorString(async));
}

class NcclWork : public Work {
 public:
  NcclWork(int device, ncclComm_t comm, cudaStream_t compute, cudaEvent_t event, std::vector<at::Tensor> keep,
           bool host_sync)
      : device_(device), comm_(comm), compute_(compute), event_(event), keep_(std::move(keep)), host_sync_(host_sync) {}
  ~NcclWork() override {
    // Even a dropped handle orders the compute stream after the transfer, so that memory the caller frees
    // next is not reused by kernels racing the collective.
    // No throwing here; the device is set by hand because a null compute stream means this device's one.
    int previous = 0;
    cudaGetDevice(&previous);
    cudaSetDevice(device_);
    if (!waited_) cudaStreamWaitEvent(compute_, event_, 0);
    cudaEventDestroy(event_);  // resources are released once the event completes
    cudaSetDevice(previous);
  }

  void wait() override {
    if (host_sync_) return synchronize();
    if (waited_) return;
    DeviceGuard guard(device_);
    CUDA_CHECK(cudaStreamWaitEvent(compute_, event_, 0));
    waited_ = true;
    // The compute stream is now ordered after the transfer; a caching allocator reusing these buffers on it
    // is safe, so the references can go.
    keep_.clear();
  }
  bool is_completed() override {
    DeviceGuard guard(device_);
    const cudaError_t rc = cudaEventQuery(event_);
    if (rc == cudaErrorNotReady) {
      check_async(comm_);
      return false;
    }
    CUDA_CHECK(rc);
    return true;
  }
  void synchronize() override {
    DeviceGuard guard(device_);
    // Poll rather than cudaEventSynchronize so that an asynchronous NCCL failure ends the wait.
    for (;;) {
      const cudaError_t rc = cudaEventQuery(event_);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) CUDA_CHECK(rc);
      check_async(comm_);
    }
    if (!waited_) CUDA_CHECK(cudaStreamWaitEvent(compute_, event_, 0));
    waited_ = true;
    keep_.clear();
  }

 private:
  int device_;
  ncclComm_t comm_;
  cudaStream_t compute_;
  cudaEvent_t event_;
  std::vector<at::Tensor> keep_;
  bool host_sync_;
  bool waited_ = false;
};

}  // namespace

ProcessGroupNccl::ProcessGroupNccl(const Communicator& comm, at::Device device)
    : ProcessGroup(comm.rank(), comm.size()), comm_(comm.dup()) {
  OMNI_CHECK(device.is_cuda(), "ProcessGroupNccl needs a CUDA device, got ", device);
  if (device.has_index()) {
    device_index_ = device.index();
  } else {
    CUDA_CHECK(cudaGetDevice(&device_index_));
  }
  DeviceGuard guard(device_index_);
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
}

ProcessGroupNccl::~ProcessGroupNccl() {
  // No throwing here: release what exists, letting queued work drain first.
  int previous = 0;
  cudaGetDevice(&previous);
  cudaSetDevice(device_index_);
  if (stream_) cudaStreamSynchronize(stream_);
  if (nccl_) ncclCommDestroy(nccl_);
  if (scratch_) cudaFree(scratch_);
  if (ready_) cudaEventDestroy(ready_);
  if (stream_) cudaStreamDestroy(stream_);
  cudaSetDevice(previous);
}

void ProcessGroupNccl::wait_for_compute() {
  CUDA_CHECK(cudaEventRecord(ready_, compute_stream_));
  CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
}

WorkHandle ProcessGroupNccl::finish(std::vector<at::Tensor> keep, bool host_sync) {
  cudaEvent_t done = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  CUDA_CHECK(cudaEventRecord(done, stream_));
  return std::make_shared<NcclWork>(device_index_, nccl_, compute_stream_, done, std::move(keep), host_sync);
}

WorkHandle ProcessGroupNccl::do_all_gather(const at::Tensor& output, const at::Tensor& input) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  // NCCL's in-place form is exactly the one the base class admits: input at output's own slice.
  NCCL_CHECK(ncclAllGather(input.data_ptr(), output.data_ptr(), static_cast<size_t>(input.numel()),
                           nccl_type(input.scalar_type()), nccl_, stream_));
  return finish({output, input});
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
  return finish({output, input});
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
  return finish({output, input});
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
  return finish({output, input});
}

WorkHandle ProcessGroupNccl::do_broadcast(const at::Tensor& tensor, int root) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  NCCL_CHECK(ncclBroadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), root, nccl_, stream_));
  return finish({tensor});
}

WorkHandle ProcessGroupNccl::do_all_reduce(const at::Tensor& tensor, ReduceOp op) {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  NCCL_CHECK(ncclAllReduce(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.numel()),
                           nccl_type(tensor.scalar_type()), op == ReduceOp::kSum ? ncclSum : ncclMax, nccl_, stream_));
  return finish({tensor});
}

WorkHandle ProcessGroupNccl::do_barrier() {
  DeviceGuard guard(device_index_);
  wait_for_compute();
  // NCCL has no barrier: a one-element all-reduce that every rank must join, and a host-blocking wait.
  NCCL_CHECK(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, nccl_, stream_));
  return finish({}, /*host_sync=*/true);
}

}  // namespace omni::dist

#endif  // OMNI_WITH_NCCL
