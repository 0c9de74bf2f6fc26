#include "dist/mpi_check.h"

#include <string>

#include "core/error.h"

namespace omni::dist {

void throw_mpi_error(const char* call, int rc, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw_error(ExitCode::kFailure, file, line, str_cat("MPI call ", call, " failed: ", std::string(text, len)));
}

}  // namespace omni::dist
