// NCCL backend of ProcessGroup for CUDA tensors (only with OMNI_WITH_NCCL).
//
// One ncclComm per group, bootstrapped by broadcasting rank 0's ncclUniqueId over the group's MPI
// communicator. Collectives run on a dedicated communication stream, which first waits for the work already
// queued on the compute stream (so inputs are ready); each Work records a CUDA event on the communication
// stream, and wait() makes the compute stream wait for it. The host never blocks, so the next unit's gather
// overlaps the current unit's kernels.
// Every collective is watched by the CollectiveWatchdog (dist/watchdog.h): an asynchronous NCCL error or
// --collective-timeout aborts every communicator and ends the job with one line naming the collective.
// Destruction on an error path (an exception unwinding, dist::failing()) aborts the communicator instead of
// draining it, so that a rank failing on its own cannot wait for peers stuck in a collective
// (dist/nccl_teardown.h).
//
// Only raw data_ptr() and the CUDA runtime API are used (no ATen CUDA headers): the build must also work
// with a CPU-only LibTorch, where CUDA tensors exist only as views (at::for_blob) of cudaMalloc'd memory.
#pragma once

#ifdef OMNI_WITH_NCCL

#include "dist/cuda_check.h"
#include "dist/process_group.h"

namespace omni::dist {

class ProcessGroupNccl : public ProcessGroup {
 public:
  // Collective over `comm`. `device` is a CUDA device; without an index, the current CUDA device.
  // `name` names the group in errors ("shard"; empty: unnamed).
  ProcessGroupNccl(const Communicator& comm, at::Device device, const std::string& name = "");
  ~ProcessGroupNccl() override;

  at::Device device() const override { return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device_index_)); }
  const char* backend_name() const override { return "nccl"; }

 protected:
  WorkHandle do_all_gather(const at::Tensor& output, const at::Tensor& input) override;
  WorkHandle do_all_gather_v(const at::Tensor& output, const at::Tensor& input,
                             const std::vector<int64_t>& counts) override;
  WorkHandle do_all_to_all(const at::Tensor& output, const at::Tensor& input) override;
  WorkHandle do_all_to_all_v(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& send_counts,
                             const std::vector<int64_t>& recv_counts) override;
  WorkHandle do_broadcast(const at::Tensor& tensor, int root) override;
  WorkHandle do_all_reduce(const at::Tensor& tensor, ReduceOp op) override;
  WorkHandle do_barrier() override;

 private:
  // The compute stream: LibTorch's current stream on this device when a collective is called (its default
  // stream unless a guard set another), read at every call, so that code under a stream guard stays ordered.
  cudaStream_t compute_stream() const;
  // Orders the communication stream after everything queued so far on the compute stream.
  void wait_for_compute();
  // A Work whose event is recorded on the communication stream now, watched by the CollectiveWatchdog under
  // the name of `op` on `data`; `host_sync` makes wait() block.
  WorkHandle finish(const char* op, const at::Tensor& data, std::vector<at::Tensor> keep, bool host_sync = false);

  Communicator comm_;
  int device_index_ = 0;
  ncclComm_t nccl_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;  // reused: cudaStreamWaitEvent captures the event when called
  float* scratch_ = nullptr;     // one float on the device for barrier()
  int abort_hook_ = -1;          // CollectiveWatchdog abort hook of nccl_, and the owner id of its watched collectives
};

}  // namespace omni::dist

#endif  // OMNI_WITH_NCCL
