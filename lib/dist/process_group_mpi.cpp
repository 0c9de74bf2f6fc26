#include "dist/process_group_mpi.h"

#include <ATen/ATen.h>

#include <climits>
#include <functional>

#include "core/error.h"
#include "dist/mpi_check.h"

namespace omni::dist {
namespace {

// bfloat16 and float16 travel as raw 2-byte elements: MPI has no such types, and moving bits is exact.
MPI_Datatype mpi_type(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return MPI_FLOAT;
    case at::kDouble:
      return MPI_DOUBLE;
    case at::kBFloat16:
    case at::kHalf:
      return MPI_UINT16_T;
    case at::kLong:
      return MPI_INT64_T;
    case at::kInt:
      return MPI_INT32_T;
    case at::kChar:
      return MPI_INT8_T;
    case at::kByte:
    case at::kBool:
    case at::kFloat8_e4m3fn:
      return MPI_UINT8_T;
    default:
      OMNI_FAIL("no MPI datatype for ", t);
  }
}

// MPI counts and displacements are int; a larger message would need derived datatypes, which no caller
// needs yet (HSDP units stay far below 2^31 elements per rank).
int as_count(int64_t v, const char* op, const char* what) {
  OMNI_CHECK(v <= INT_MAX, op, ": ", what, " of ", v, " elements exceeds MPI's int count limit (", INT_MAX, ")");
  return static_cast<int>(v);
}

std::vector<int> as_counts(const std::vector<int64_t>& v, const char* op, const char* what) {
  std::vector<int> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = as_count(v[i], op, what);
  return out;
}

class MpiWork : public Work {
 public:
  // The request lives in the Work; so do the count arrays of the v-collectives, which MPI reads until the
  // operation completes, and the tensors, so that their memory outlives the transfer.
  MpiWork(std::vector<at::Tensor> keep, std::function<void()> on_complete = {})
      : keep_(std::move(keep)), on_complete_(std::move(on_complete)) {}
  ~MpiWork() override {
    if (done_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    // A dropped handle still completes its operation (and a reduced bf16 result still lands), since the
    // caller may read the output later and other ranks wait on this one.
    MPI_Wait(&request_, MPI_STATUS_IGNORE);
    try {
      finish();
    } catch (...) {
    }
  }

  MPI_Request* request() { return &request_; }
  std::vector<int>& ints(size_t i) { return ints_[i]; }

  void wait() override {
    if (done_) return;
    MPI_CHECK(MPI_Wait(&request_, MPI_STATUS_IGNORE));
    finish();
  }
  bool is_completed() override {
    if (done_) return true;
    int flag = 0;
    MPI_CHECK(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE));
    if (flag) finish();
    return done_;
  }

 private:
  void finish() {
    done_ = true;
    if (on_complete_) on_complete_();
    keep_.clear();
  }

  MPI_Request request_ = MPI_REQUEST_NULL;
  std::vector<at::Tensor> keep_;
  std::function<void()> on_complete_;
  std::vector<int> ints_[4];
  bool done_ = false;
};

}  // namespace

ProcessGroupMpi::ProcessGroupMpi(const Communicator& comm, const std::string& name)
    : ProcessGroup(comm, name), comm_(comm.dup()) {}

WorkHandle ProcessGroupMpi::do_all_gather(const at::Tensor& output, const at::Tensor& input) {
  const MPI_Datatype type = mpi_type(input.scalar_type());
  const int n = as_count(input.numel(), "all_gather_into_flat", "input");
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{output, input});
  // The base class admits overlap only when input is exactly output's own slice: MPI's in-place form.
  const bool in_place = input.numel() > 0 && input.data_ptr() == static_cast<char*>(output.data_ptr()) +
                                                                     rank() * input.numel() * input.element_size();
  MPI_CHECK(MPI_Iallgather(in_place ? MPI_IN_PLACE : input.data_ptr(), n, type, output.data_ptr(), n, type,
                           comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_all_gather_v(const at::Tensor& output, const at::Tensor& input,
                                            const std::vector<int64_t>& counts) {
  const MPI_Datatype type = mpi_type(input.scalar_type());
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{output, input});
  auto& c = work->ints(0);
  auto& d = work->ints(1);
  c = as_counts(counts, "all_gather_v", "counts");
  d = as_counts(exclusive_offsets(counts), "all_gather_v", "a displacement");
  MPI_CHECK(MPI_Iallgatherv(input.data_ptr(), c[rank()], type, output.data_ptr(), c.data(), d.data(), type,
                            comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_all_to_all(const at::Tensor& output, const at::Tensor& input) {
  const MPI_Datatype type = mpi_type(input.scalar_type());
  const int chunk = as_count(input.numel() / size(), "all_to_all", "a chunk");
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{output, input});
  MPI_CHECK(
      MPI_Ialltoall(input.data_ptr(), chunk, type, output.data_ptr(), chunk, type, comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_all_to_all_v(const at::Tensor& output, const at::Tensor& input,
                                            const std::vector<int64_t>& send_counts,
                                            const std::vector<int64_t>& recv_counts) {
  const MPI_Datatype type = mpi_type(input.scalar_type());
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{output, input});
  auto& sc = work->ints(0);
  auto& sd = work->ints(1);
  auto& rc = work->ints(2);
  auto& rd = work->ints(3);
  sc = as_counts(send_counts, "all_to_all_v", "send_counts");
  sd = as_counts(exclusive_offsets(send_counts), "all_to_all_v", "a send displacement");
  rc = as_counts(recv_counts, "all_to_all_v", "recv_counts");
  rd = as_counts(exclusive_offsets(recv_counts), "all_to_all_v", "a receive displacement");
  MPI_CHECK(MPI_Ialltoallv(input.data_ptr(), sc.data(), sd.data(), type, output.data_ptr(), rc.data(), rd.data(), type,
                           comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_broadcast(const at::Tensor& tensor, int root) {
  const MPI_Datatype type = mpi_type(tensor.scalar_type());
  const int n = as_count(tensor.numel(), "broadcast", "tensor");
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{tensor});
  MPI_CHECK(MPI_Ibcast(tensor.data_ptr(), n, type, root, comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_all_reduce(const at::Tensor& tensor, ReduceOp op) {
  const MPI_Op mpi_op = op == ReduceOp::kSum ? MPI_SUM : MPI_MAX;
  const int n = as_count(tensor.numel(), "all_reduce", "tensor");
  const auto t = tensor.scalar_type();
  if (t == at::kBFloat16 || t == at::kHalf) {
    // MPI cannot add 2-byte floats: reduce a float32 copy and round once when the result arrives, which is
    // also more accurate than rounding after every pairwise addition.
    at::Tensor staging = tensor.to(at::kFloat);
    at::Tensor target = tensor;
    auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{tensor, staging},
                                          [target, staging]() mutable { target.copy_(staging); });
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, staging.data_ptr(), n, MPI_FLOAT, mpi_op, comm_.comm(), work->request()));
    return work;
  }
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{tensor});
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, tensor.data_ptr(), n, mpi_type(t), mpi_op, comm_.comm(), work->request()));
  return work;
}

WorkHandle ProcessGroupMpi::do_barrier() {
  auto work = std::make_shared<MpiWork>(std::vector<at::Tensor>{});
  MPI_CHECK(MPI_Ibarrier(comm_.comm(), work->request()));
  return work;
}

}  // namespace omni::dist
