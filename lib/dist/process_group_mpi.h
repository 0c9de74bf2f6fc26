// MPI backend of ProcessGroup for CPU tensors: every collective is a non-blocking MPI call (MPI_Iallgather,
// MPI_Ialltoall(v), MPI_Ibcast, MPI_Iallreduce, MPI_Ibarrier) whose request the Work holds.
//
// Open MPI progresses non-blocking collectives only inside MPI calls, so a transfer advances while the
// rank computes only as far as Work::is_completed() (MPI_Test) is polled; a large gather finishes in wait().
#pragma once

#include "dist/process_group.h"

namespace omni::dist {

class ProcessGroupMpi : public ProcessGroup {
 public:
  // Collective over `comm`; keeps a duplicate so that its requests never match the caller's messages.
  explicit ProcessGroupMpi(const Communicator& comm, const std::string& name = "");

  at::Device device() const override { return at::Device(at::kCPU); }
  const char* backend_name() const override { return "mpi"; }
  const Communicator& communicator() const { return comm_; }

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
  Communicator comm_;
};

}  // namespace omni::dist
