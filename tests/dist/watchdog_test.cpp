// The collective watchdog's decisions, with stand-in collectives (the NCCL ones need a GPU): a collective
// that finishes is dropped, one that fails asynchronously or outlives --collective-timeout ends the run with
// one line naming it, after every communicator's abort hook ran; an owner that retires its communicator sees
// no poll of it afterwards; a process that exits is never reported as a failed collective.
#include "dist/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "core/error.h"

using omni::dist::CollectiveWatchdog;
using omni::dist::PollResult;

namespace {

struct Captured {
  std::atomic<int> calls{0};
  std::string message;
};

// Fresh handler per test; the watchdog is process-wide.
Captured* capture() {
  auto* c = new Captured;  // leaked on purpose: the watchdog thread may call the handler late
  CollectiveWatchdog::instance().set_fail_handler([c](const std::string& m) {
    c->message = m;
    c->calls++;
  });
  return c;
}

}  // namespace

TEST(Watchdog, FinishedCollectivesAreDroppedWithoutFailing) {
  auto* got = capture();
  omni::dist::set_collective_timeout(0.05);
  auto& dog = CollectiveWatchdog::instance();
  std::atomic<bool> done{false};
  dog.watch([] { return std::string("test all_gather on the shard group"); },
            [&](std::string*) { return done ? PollResult::kDone : PollResult::kPending; });
  done = true;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(dog.check_now(), "");
  EXPECT_EQ(dog.pending(), 0u);
  EXPECT_EQ(got->calls, 0);
}

TEST(Watchdog, PendingPastTheTimeoutAbortsEveryCommunicatorAndNamesTheCollective) {
  auto* got = capture();
  omni::dist::set_collective_timeout(0.3);
  auto& dog = CollectiveWatchdog::instance();
  std::atomic<int> aborted{0};
  const int h1 = dog.add_abort_hook([&] { aborted++; });
  const int h2 = dog.add_abort_hook([&] { aborted++; });
  const auto start = std::chrono::steady_clock::now();
  dog.watch([] { return std::string("NCCL all_to_all of 64 BFloat16 on ulysses group (world ranks 0,1)"); },
            [](std::string*) { return PollResult::kPending; });
  // Not before the timeout.
  EXPECT_EQ(dog.check_now(), "");
  EXPECT_EQ(got->calls, 0);
  // The watchdog's own thread fires it, without anyone calling check_now().
  while (got->calls == 0 && std::chrono::steady_clock::now() - start < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(got->calls, 1);
  EXPECT_GE(waited, 0.3);
  EXPECT_EQ(aborted, 2);
  EXPECT_NE(got->message.find("NCCL all_to_all of 64 BFloat16 on ulysses group (world ranks 0,1) timed out "
                              "after 0.3 s (--collective-timeout)"),
            std::string::npos)
      << got->message;
  EXPECT_EQ(got->message.find('\n'), std::string::npos) << "one line";
  EXPECT_EQ(dog.pending(), 0u);
  dog.remove_abort_hook(h1);
  dog.remove_abort_hook(h2);
}

TEST(Watchdog, AsynchronousFailureEndsTheRunAtOnceWithItsReason) {
  auto* got = capture();
  omni::dist::set_collective_timeout(600);
  auto& dog = CollectiveWatchdog::instance();
  std::atomic<int> aborted{0};
  const int h = dog.add_abort_hook([&] { aborted++; });
  dog.watch([] { return std::string("NCCL all_gather of 8 Float on shard group (world ranks 0,1,2,3)"); },
            [](std::string* why) {
              *why = "NCCL: remote process exited or there was a network error";
              return PollResult::kFailed;
            });
  const std::string message = dog.check_now();
  EXPECT_EQ(got->calls, 1);
  EXPECT_EQ(aborted, 1);
  EXPECT_NE(message.find("shard group (world ranks 0,1,2,3) failed: NCCL: remote process exited"), std::string::npos)
      << message;
  EXPECT_EQ(message.rfind("omni-generate: error (rank 0/1): ", 0), 0u) << message;
  dog.remove_abort_hook(h);
}

TEST(Watchdog, TimeoutMustBePositive) {
  EXPECT_THROW(omni::dist::set_collective_timeout(0), omni::Error);
  EXPECT_THROW(omni::dist::set_collective_timeout(-5), omni::Error);
}

// The owner of a communicator (ProcessGroupNccl) retires it before ncclCommDestroy: a poll already running
// (it queries the communicator) must have returned when retire_owner() does, and none may start after.
TEST(Watchdog, RetireOwnerWaitsForThePollInProgressAndNoPollOfItsCommunicatorFollows) {
  auto* got = capture();
  omni::dist::set_collective_timeout(600);
  auto& dog = CollectiveWatchdog::instance();
  const int owner = dog.add_abort_hook([] {});
  const int other = dog.add_abort_hook([] {});
  std::atomic<bool> in_poll{false}, release{false}, poll_returned{false}, destroyed{false};
  std::atomic<int> polls_after_destroy{0}, other_polls{0};
  dog.watch([] { return std::string("NCCL all_gather #1 on the retiring group"); },
            [&](std::string*) {
              if (destroyed) polls_after_destroy++;
              in_poll = true;
              while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(1));
              poll_returned = true;
              return PollResult::kPending;
            },
            owner);
  dog.watch([] { return std::string("NCCL all_gather #1 on another group"); },
            [&](std::string*) {
              other_polls++;
              return PollResult::kPending;
            },
            other);
  std::thread poller([&] { dog.check_now(); });
  while (!in_poll) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // The latch opens only well after retire_owner() was entered.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    release = true;
  });
  EXPECT_TRUE(dog.retire_owner(owner));
  EXPECT_TRUE(poll_returned) << "retire_owner() returned while a poll of its communicator was still running";
  destroyed = true;  // the owner's ncclCommDestroy
  opener.join();
  poller.join();
  const int before = other_polls;
  dog.check_now();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the watchdog's own thread polls too
  EXPECT_EQ(polls_after_destroy, 0);
  EXPECT_GT(other_polls, before) << "another owner's collectives stay watched";
  EXPECT_EQ(dog.pending(), 1u);
  EXPECT_EQ(got->calls, 0);
  EXPECT_FALSE(dog.remove_abort_hook(owner)) << "retire_owner() removes the abort hook too";
  EXPECT_TRUE(dog.retire_owner(other));
  EXPECT_EQ(dog.pending(), 0u);
}

// A collective whose event query says the CUDA runtime is unloading (main returned with it in flight) is not
// a failed collective: it is dropped, nothing is reported.
TEST(Watchdog, CollectiveCutShortByProcessExitIsDroppedWithoutFailing) {
  auto* got = capture();
  omni::dist::set_collective_timeout(600);
  auto& dog = CollectiveWatchdog::instance();
  dog.watch([] { return std::string("NCCL broadcast #3 on the world group"); },
            [](std::string*) { return PollResult::kExiting; });
  EXPECT_EQ(dog.check_now(), "");
  EXPECT_EQ(dog.pending(), 0u);
  EXPECT_EQ(got->calls, 0);
}

// The watchdog stops at exit: a collective still pending when the process exits is never reported, even when
// the exit takes longer than --collective-timeout (static destructors, the CUDA runtime unloading).
TEST(WatchdogDeathTest, ExitWithACollectiveInFlightIsNeverReported) {
  // A fresh process (re-executed, not forked: a fork has no watchdog thread), so that the slow exit handler
  // below is registered before the watchdog's own and runs after it.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        std::atexit([] { std::this_thread::sleep_for(std::chrono::milliseconds(600)); });
        auto& dog = CollectiveWatchdog::instance();
        dog.set_fail_handler([](const std::string& m) {
          std::fprintf(stderr, "reported after exit: %s\n", m.c_str());
          std::_Exit(3);
        });
        omni::dist::set_collective_timeout(0.1);
        dog.watch([] { return std::string("NCCL all_gather #9 on the shard group"); },
                  [](std::string*) { return PollResult::kPending; });
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
}
