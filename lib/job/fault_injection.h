// The job's test hook for its failure paths (tests/e2e: abort, resume after a killed rank).
#pragma once

namespace omni::job {

// Test hook for the abort path: OMNI_FAULT_INJECT="RANK:STEP" makes that rank fail after that denoising step,
// while the others are inside collectives, as a real failure (out of memory, a bad device) would.
// "RANK:STEP:VIDEO:kill" kills that rank outright (SIGKILL, as a preempted node) after STEP of the VIDEO-th
// video it generates (0-based), to test resuming.
void maybe_inject_fault(int rank, int step, int video);

}  // namespace omni::job
