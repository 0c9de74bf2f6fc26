#include "core/error.h"

#include <cstdio>

namespace omni {

void throw_error(ExitCode code, const char* file, int line, const std::string& message) {
  // Usage and input errors are the user's to fix: the message alone says what to change. Internal
  // failures keep the source location so that a bug report points at the check that fired.
  if (code == ExitCode::kFailure) {
    std::string where = file;
    auto slash = where.find("lib/");
    if (slash != std::string::npos) where = where.substr(slash);
    throw Error(code, str_cat(message, " [", where, ":", line, "]"));
  }
  throw Error(code, message);
}

int run_tool(const char* name, int (*run)(int, char**), int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", name, e.what());
    return 1;
  }
}

}  // namespace omni
