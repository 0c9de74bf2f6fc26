#include "job/fault_injection.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"

namespace omni::job {

void maybe_inject_fault(int rank, int step, int video) {
  static const char* spec = std::getenv("OMNI_FAULT_INJECT");
  if (spec == nullptr) return;
  int fault_rank = -1, fault_step = -1, fault_video = -1;
  char mode[8] = "";
  const int n = std::sscanf(spec, "%d:%d:%d:%7s", &fault_rank, &fault_step, &fault_video, mode);
  if (n < 2 || rank != fault_rank || step != fault_step) return;
  if (n == 4 && std::string(mode) == "kill") {
    if (video == fault_video) std::raise(SIGKILL);
    return;
  }
  OMNI_FAIL("injected fault (OMNI_FAULT_INJECT=", spec, ") after step ", step);
}

}  // namespace omni::job
