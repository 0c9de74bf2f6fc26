// The harness of the tests that run under mpirun (no gtest there): every rank runs the same checks in the same
// order; each check's result is all-reduced so that a failure on any rank fails it everywhere, world rank 0
// prints one line per check and "N passed, N failed", and a failing rank says on stderr what it saw.
// mpi_test_main runs the test so that a thrown error aborts all ranks instead of leaving them waiting.
#pragma once

#include <mpi.h>

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <exception>
#include <limits>
#include <string>

#include "dist/communicator.h"

namespace omni::test_util {

class MpiChecks {
 public:
  // Passes when the worst `local_err` over all ranks is <= tol (NaN fails). `ref_scale` >= 0 is printed as
  // the reference's magnitude, to read the error against.
  bool err(const std::string& what, double local_err, double tol = 0.0, double ref_scale = -1) {
    // MPI_MAX over a NaN is implementation-defined (Open MPI drops it: max(NaN, x) = x), so a NaN is sent as
    // +inf, and the verdict is also agreed on by itself: a NaN on any rank fails the check on every rank.
    const double sent = std::isnan(local_err) ? std::numeric_limits<double>::infinity() : local_err;
    double worst = sent;
    MPI_Allreduce(&sent, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    const bool ok = worst <= tol && !any_rank(!(local_err <= tol));
    std::string line = what + format(" max_abs_err=%g", worst);
    if (tol != 0.0 || ref_scale >= 0) {
      line += format(" (tol %g", tol) + (ref_scale >= 0 ? format(", max|ref| %g", ref_scale) : "") + ")";
    }
    return record(ok, line, !(local_err <= tol), what + format(": max_abs_err=%g", local_err));
  }
  // Passes when `local_ok` holds on every rank.
  bool truth(const std::string& what, bool local_ok, const std::string& detail = "") {
    return record(!any_rank(!local_ok), what, !local_ok, what + ": " + detail);
  }
  // Passes when value <= bound on every rank; prints rank 0's figures (and any failing rank's).
  bool at_most(const std::string& what, double value, double bound) {
    const bool bad = value > bound;
    return record(!any_rank(bad), what + format(": %.0f <= %.0f (rank 0)", value, bound), bad,
                  what + format(": %.0f > %.0f", value, bound));
  }
  // Passes when value == expected on every rank; prints rank 0's figures (and any failing rank's).
  bool equal(const std::string& what, double value, double expected) {
    const bool bad = value != expected;
    return record(!any_rank(bad), what + format(": %.0f == %.0f (rank 0)", value, expected), bad,
                  what + format(": %.0f != %.0f", value, expected));
  }

  int passed() const { return passed_; }
  int failed() const { return failed_; }
  // Prints the "N passed, N failed" summary on rank 0; returns the process exit code (0: all passed).
  int summary() const {
    if (world_rank() == 0) std::printf("%d passed, %d failed\n", passed_, failed_);
    std::fflush(stdout);
    return failed_ == 0 ? 0 : 1;
  }

 private:
  static int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
  }
  static bool any_rank(bool local) {
    const int mine = local ? 1 : 0;
    int any = mine;
    MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return any != 0;
  }
  static std::string format(const char* fmt, ...) {
    char buf[256];
    va_list args;
    va_start(args, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    return buf;
  }
  // Counts one check (`ok` is already agreed by all ranks); rank 0 prints `line`, a rank that failed locally
  // prints `local_detail` on stderr.
  bool record(bool ok, const std::string& line, bool local_bad, const std::string& local_detail) {
    (ok ? passed_ : failed_)++;
    const int rank = world_rank();
    if (rank == 0) std::printf("%s %s\n", ok ? "ok  " : "FAIL", line.c_str());
    if (!ok && local_bad) std::fprintf(stderr, "rank %d: %s\n", rank, local_detail.c_str());
    std::fflush(stdout);
    return ok;
  }

  int passed_ = 0;
  int failed_ = 0;
};

// main() of an MPI test: runs `run_all` (which returns the exit code) between MPI_Init and MPI_Finalize; an
// exception aborts every rank with "<name>: <what>".
inline int mpi_test_main(int argc, char** argv, const char* name, int (*run_all)()) {
  omni::dist::MpiEnvironment env(&argc, &argv);
  int rc = 1;
  try {
    rc = run_all();
  } catch (const std::exception& e) {
    omni::dist::abort_all(1, std::string(name) + ": " + e.what());
  }
  return rc;
}

}  // namespace omni::test_util
