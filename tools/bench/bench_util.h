// What the MPI benchmarks share: the "--flag value" command line, and main(), which runs the benchmark between
// MPI_Init and MPI_Finalize and turns an error on any rank into an abort of all ranks (exit code from
// omni::Error, else 1), so that no rank is left waiting in a collective.
#pragma once

#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "dist/communicator.h"

namespace omni::bench {

// The command line's (flag, value) pairs in order (every flag takes a value); a flag without one is a usage
// error. The values point into argv.
inline std::vector<std::pair<std::string, const char*>> flag_values(int argc, char** argv, const char* name) {
  std::vector<std::pair<std::string, const char*>> out;
  for (int i = 1; i < argc; i += 2) {
    OMNI_CHECK_USAGE(i + 1 < argc, name, ": ", argv[i], " needs a value");
    out.emplace_back(argv[i], argv[i + 1]);
  }
  return out;
}

// `run` parses the command line and returns the exit code; `name` prefixes the error message.
inline int bench_main(int argc, char** argv, const char* name, int (*run)(int, char**)) {
  omni::dist::MpiEnvironment env(&argc, &argv);
  try {
    return run(argc, argv);
  } catch (const omni::Error& e) {
    omni::dist::abort_all(e.exit_code(), std::string(name) + ": " + e.what());
  } catch (const std::exception& e) {
    omni::dist::abort_all(1, std::string(name) + ": " + e.what());
  }
}

}  // namespace omni::bench
