// The multi-rank harness itself (mpi_check.h), under mpirun at 2 and 4 ranks: a NaN or a too-large error on
// any one rank fails err() on every rank, and agreeing errors pass. The verdicts of an inner MpiChecks are
// checked by the outer one, whose table decides the exit code.
#include <cmath>
#include <limits>

#include "mpi_check.h"

namespace {

int run_all() {
  omni::test_util::MpiChecks inner, outer;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (int culprit = 0; culprit < size; ++culprit) {
    const bool nan_ok = inner.err("inner: NaN on one rank", rank == culprit ? nan : 0.0, 1e-3);
    outer.truth("a NaN on rank " + std::to_string(culprit) + " fails err() on every rank", !nan_ok);
    const bool big_ok = inner.err("inner: error 1 on one rank", rank == culprit ? 1.0 : 0.0, 1e-3);
    outer.truth("an error above the tolerance on rank " + std::to_string(culprit) + " fails err()", !big_ok);
  }
  outer.truth("errors within the tolerance on every rank pass err()", inner.err("inner: small", 1e-4 * rank, 1e-3));
  return outer.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "mpi_check_selftest", run_all);
}
