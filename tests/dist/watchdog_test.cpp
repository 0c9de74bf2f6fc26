// The collective watchdog's decisions, with stand-in collectives (the NCCL ones need a GPU): a collective
// that finishes is dropped, one that fails asynchronously or outlives --collective-timeout ends the run with
// one line naming it, after every communicator's abort hook ran.
#include "dist/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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
