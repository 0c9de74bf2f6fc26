#include "dist/agreement.h"

#include <exception>

#include "dist/mpi_check.h"

namespace omni::dist {

PeerFailure::PeerFailure(ExitCode code, int failed_rank)
    : Error(code, str_cat("rank ", failed_rank, " failed (its message says why)")), failed_rank_(failed_rank) {}

void run_agreed(const Communicator& comm, const std::function<void()>& phase) {
  std::exception_ptr error;
  int code = 0;
  try {
    phase();
  } catch (const Error& e) {
    error = std::current_exception();
    code = e.exit_code();
  } catch (const std::exception&) {
    error = std::current_exception();
    code = static_cast<int>(ExitCode::kFailure);
  }
  if (comm.size() == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  // The lowest failing rank (size when none) and its exit code.
  int mine = error ? comm.rank() : comm.size();
  int first = comm.size();
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm.comm()));
  if (first == comm.size()) return;
  MPI_CHECK(MPI_Bcast(&code, 1, MPI_INT, first, comm.comm()));
  if (comm.rank() == first) std::rethrow_exception(error);
  throw PeerFailure(static_cast<ExitCode>(code), first);
}

}  // namespace omni::dist
