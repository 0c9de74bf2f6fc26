// Errors, exit codes and the one family of check macros (docs/DESIGN.md section 5 and 6).
//
// Every failure a user can hit is an omni::Error carrying the exit code that main() returns:
//   2 bad usage or invalid configuration, 3 bad input files, 1 anything else.
// Messages are built from any streamable values: OMNI_CHECK(x > 0, "--height must be positive, got ", x).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace omni {

enum class ExitCode : int { kOk = 0, kFailure = 1, kUsage = 2, kInput = 3 };

class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ExitCode code() const { return code_; }
  int exit_code() const { return static_cast<int>(code_); }

 private:
  ExitCode code_;
};

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

[[noreturn]] void throw_error(ExitCode code, const char* file, int line, const std::string& message);

// main() of a one-process tool: runs `run`, and turns an error into "NAME: error: MESSAGE" on stderr and its
// exit code (omni::Error's, else 1).
int run_tool(const char* name, int (*run)(int, char**), int argc, char** argv);

}  // namespace omni

// Internal invariant or runtime failure (exit 1). The message says what failed and why.
#define OMNI_CHECK(cond, ...)                                                                                       \
  do {                                                                                                              \
    if (!(cond)) ::omni::throw_error(::omni::ExitCode::kFailure, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__)); \
  } while (0)
// Bad usage or invalid configuration (exit 2): name the flag, what was expected and what was given.
#define OMNI_CHECK_USAGE(cond, ...)                                                                               \
  do {                                                                                                            \
    if (!(cond)) ::omni::throw_error(::omni::ExitCode::kUsage, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__)); \
  } while (0)
// Bad input file (exit 3): name the file (and tensor / key), what was expected and what was found.
#define OMNI_CHECK_INPUT(cond, ...)                                                                               \
  do {                                                                                                            \
    if (!(cond)) ::omni::throw_error(::omni::ExitCode::kInput, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__)); \
  } while (0)
#define OMNI_FAIL(...) ::omni::throw_error(::omni::ExitCode::kFailure, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__))
#define OMNI_FAIL_USAGE(...) \
  ::omni::throw_error(::omni::ExitCode::kUsage, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__))
#define OMNI_FAIL_INPUT(...) \
  ::omni::throw_error(::omni::ExitCode::kInput, __FILE__, __LINE__, ::omni::str_cat(__VA_ARGS__))
