// How a communicator's owner lets it go (dist/nccl_teardown.h), with recording stand-ins for the CUDA and
// NCCL calls: on the normal path it drains and destroys, on an error path (an exception unwinding through the
// owner, or the process marked failing) it aborts and never waits for a peer. Also what a completion event's
// query means for the watchdog (process exit is not a failed collective).
#include "dist/nccl_teardown.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "dist/communicator.h"
#include "dist/watchdog.h"

using omni::dist::CommTeardownSteps;
using omni::dist::tear_down_communicator;
using omni::dist::tearing_down_on_error;
using Log = std::vector<std::string>;

namespace {

CommTeardownSteps recording(Log* log) {
  CommTeardownSteps steps;
  steps.sync_stream = [log] { log->push_back("sync"); };
  steps.destroy_comm = [log] { log->push_back("destroy"); };
  steps.abort_comm = [log] { log->push_back("abort"); };
  steps.free_memory = [log] { log->push_back("free"); };
  steps.release = [log] { log->push_back("release"); };
  return steps;
}

// Stands in for ProcessGroupNccl: its destructor decides the path the same way (tearing_down_on_error).
struct FakeGroup {
  Log* log;
  ~FakeGroup() { tear_down_communicator(recording(log), tearing_down_on_error()); }
};

const Log kGraceful{"sync", "destroy", "free", "release"};
const Log kAborted{"abort", "release"};

}  // namespace

TEST(NcclTeardown, NormalPathDrainsTheStreamThenDestroys) {
  Log log;
  tear_down_communicator(recording(&log), /*on_error=*/false);
  EXPECT_EQ(log, kGraceful);
}

TEST(NcclTeardown, ErrorPathAbortsAndNeverWaitsForAPeer) {
  Log log;
  tear_down_communicator(recording(&log), /*on_error=*/true);
  EXPECT_EQ(log, kAborted);
}

TEST(NcclTeardown, CommunicatorTheWatchdogAlreadyAbortedIsNotTouchedAgain) {
  Log log;
  tear_down_communicator(recording(&log), /*on_error=*/true, /*comm_alive=*/false);
  EXPECT_EQ(log, Log{"release"});
  log.clear();
  tear_down_communicator(recording(&log), /*on_error=*/false, /*comm_alive=*/false);
  EXPECT_EQ(log, (Log{"sync", "free", "release"}));
}

// A rank that fails on its own (out of memory) unwinds through its process groups while the peers wait in a
// collective: the owner must abort, not drain (which would wait for --collective-timeout).
TEST(NcclTeardown, OwnerDestroyedDuringStackUnwindingTakesTheAbortPath) {
  ASSERT_FALSE(omni::dist::failing());
  Log log;
  try {
    FakeGroup group{&log};
    throw std::runtime_error("CUDA out of memory");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(log, kAborted);
  log.clear();
  { FakeGroup group{&log}; }
  EXPECT_EQ(log, kGraceful) << "an ordinary scope exit drains and destroys";
}

// Once the process is failing (main's catch block, abort_all, the watchdog), even an owner destroyed outside
// any unwinding aborts. The flag is sticky, hence a child process.
TEST(NcclTeardownDeathTest, OwnerDestroyedWhileTheProcessIsFailingTakesTheAbortPath) {
  EXPECT_EXIT(
      {
        omni::dist::mark_failing();
        Log log;
        { FakeGroup group{&log}; }
        std::exit(log == kAborted ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

// The error path aborts every registered communicator once and marks the process failing first; an owner
// retiring afterwards learns that its communicator is gone and must not destroy it again.
TEST(NcclTeardownDeathTest, AbortCommunicatorsRunsEachHookOnceAndMarksTheProcessFailing) {
  EXPECT_EXIT(
      {
        auto& dog = omni::dist::CollectiveWatchdog::instance();
        static int aborted = 0;
        static bool failing_when_aborted = false;
        const int owner = dog.add_abort_hook([] {
          ++aborted;
          failing_when_aborted = omni::dist::failing();
        });
        dog.abort_communicators();
        dog.abort_communicators();
        const bool alive = dog.retire_owner(owner);
        std::exit(aborted == 1 && failing_when_aborted && !alive ? 0 : 1);
      },
      testing::ExitedWithCode(0), "");
}

#ifdef OMNI_WITH_NCCL
namespace omni::dist {
// gtest names the enum in failures instead of printing its bytes.
void PrintTo(PollResult r, std::ostream* os) {
  static const char* const kNames[] = {"kPending", "kDone", "kFailed", "kExiting"};
  *os << kNames[static_cast<int>(r)];
}
}  // namespace omni::dist

TEST(NcclTeardown, EventQueryAtProcessExitIsNotAFailedCollective) {
  using omni::dist::classify_event_query;
  using omni::dist::PollResult;
  EXPECT_EQ(classify_event_query(cudaSuccess), PollResult::kDone);
  EXPECT_EQ(classify_event_query(cudaErrorNotReady), PollResult::kPending);
  EXPECT_EQ(classify_event_query(cudaErrorCudartUnloading), PollResult::kExiting);
  EXPECT_EQ(classify_event_query(cudaErrorContextIsDestroyed), PollResult::kExiting);
  EXPECT_EQ(classify_event_query(cudaErrorIllegalAddress), PollResult::kFailed);
  EXPECT_EQ(classify_event_query(cudaErrorLaunchFailure), PollResult::kFailed);
}
#endif
