// MPI calls checked: a failing call is an omni::Error (exit 1) naming the call and MPI's own error string
// (docs/DESIGN.md section 6: one family of check macros). MPI lives in dist/ and above; core does not link it.
#pragma once

#include <mpi.h>

#define MPI_CHECK(call)                                                                            \
  do {                                                                                             \
    int omni_mpi_rc_ = (call);                                                                     \
    if (omni_mpi_rc_ != 0) ::omni::dist::throw_mpi_error(#call, omni_mpi_rc_, __FILE__, __LINE__); \
  } while (0)

namespace omni::dist {
[[noreturn]] void throw_mpi_error(const char* call, int rc, const char* file, int line);
}
