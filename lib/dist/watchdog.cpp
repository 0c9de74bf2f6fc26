#include "dist/watchdog.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "core/docs_links.h"
#include "core/error.h"
#include "dist/communicator.h"

namespace omni::dist {
namespace {

std::atomic<double> g_timeout_seconds{600.0};

}  // namespace

void set_collective_timeout(double seconds) {
  OMNI_CHECK_USAGE(seconds > 0, "--collective-timeout must be positive, got ", seconds);
  g_timeout_seconds = seconds;
}

double collective_timeout() {
  return g_timeout_seconds;
}

struct CollectiveWatchdog::Impl {
  using Clock = std::chrono::steady_clock;
  struct Entry {
    std::function<std::string()> describe;
    std::function<PollResult(std::string*)> poll;
    Clock::time_point start;
    int owner;
  };
  // Held for a whole check_now pass, polls included: retire_owner() taking it is what guarantees that no poll
  // of a communicator is running while its owner destroys it.
  mutable std::mutex mutex;
  std::vector<Entry> entries;
  std::map<int, std::function<void()>> abort_hooks;
  int next_hook = 0;
  std::function<void(const std::string&)> on_fail = [](const std::string& m) { abort_all(1, m); };
  bool thread_started = false;
  bool failed = false;
  bool exiting = false;  // set at exit: nothing is polled or reported any more

  // Caller holds `mutex`.
  void abort_locked() {
    mark_failing();
    failed = true;
    // The communicators these collectives use are about to be freed by ncclCommAbort.
    entries.clear();
    auto hooks = std::move(abort_hooks);
    abort_hooks.clear();
    for (auto& [id, hook] : hooks) hook();
  }
};

CollectiveWatchdog::CollectiveWatchdog() : impl_(new Impl) {}

CollectiveWatchdog& CollectiveWatchdog::instance() {
  static CollectiveWatchdog* dog = [] {
    auto* d = new CollectiveWatchdog();  // never destroyed: the thread may outlive main
    // At exit, before static destructors and the CUDA runtime's own teardown (atexit handlers run in reverse
    // order of registration, and the first communicator registers here after its CUDA calls): once the
    // runtime unloads, an event query fails with cudaErrorCudartUnloading and a poll would turn a clean exit
    // into a reported failure. Taking the lock waits for a pass in progress to end.
    std::atexit([] {
      std::lock_guard<std::mutex> lock(instance().impl_->mutex);
      instance().impl_->exiting = true;
    });
    return d;
  }();
  return *dog;
}

void CollectiveWatchdog::watch(std::function<std::string()> describe, std::function<PollResult(std::string*)> poll,
                               int owner) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->entries.push_back({std::move(describe), std::move(poll), Impl::Clock::now(), owner});
  if (!impl_->thread_started) {
    impl_->thread_started = true;
    std::thread([this] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        {
          std::lock_guard<std::mutex> lock(impl_->mutex);
          if (impl_->exiting) return;
        }
        check_now();
      }
    }).detach();
  }
}

int CollectiveWatchdog::add_abort_hook(std::function<void()> hook) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->abort_hooks[impl_->next_hook] = std::move(hook);
  return impl_->next_hook++;
}

bool CollectiveWatchdog::remove_abort_hook(int id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->abort_hooks.erase(id) > 0;
}

bool CollectiveWatchdog::retire_owner(int owner) {
  // Taking the lock waits for a check_now pass (and so a poll of this owner's communicator) in progress.
  std::lock_guard<std::mutex> lock(impl_->mutex);
  auto& entries = impl_->entries;
  entries.erase(
      std::remove_if(entries.begin(), entries.end(), [owner](const Impl::Entry& e) { return e.owner == owner; }),
      entries.end());
  return impl_->abort_hooks.erase(owner) > 0;
}

void CollectiveWatchdog::abort_communicators() {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->abort_locked();
}

void CollectiveWatchdog::set_fail_handler(std::function<void(const std::string&)> handler) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->on_fail = std::move(handler);
  impl_->failed = false;
}

size_t CollectiveWatchdog::pending() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->entries.size();
}

std::string CollectiveWatchdog::check_now() {
  std::unique_lock<std::mutex> lock(impl_->mutex);
  if (impl_->failed || impl_->exiting) return {};
  const auto now = Impl::Clock::now();
  const double limit = collective_timeout();
  std::string message;
  for (size_t i = 0; i < impl_->entries.size();) {
    auto& e = impl_->entries[i];
    std::string why;
    const PollResult r = e.poll(&why);
    // kExiting: the CUDA runtime is unloading under us; the collective cannot be judged any more, and the
    // process is ending anyway.
    if (r == PollResult::kDone || r == PollResult::kExiting) {
      impl_->entries.erase(impl_->entries.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    const double waited = std::chrono::duration<double>(now - e.start).count();
    if (r == PollResult::kFailed) {
      message = str_cat(e.describe(), " failed: ", why);
    } else if (waited > limit) {
      std::ostringstream os;
      os << e.describe() << " timed out after " << limit << " s (--collective-timeout): a peer rank of that group "
         << "stopped, hangs, or never reached it (" << docs::kCollectiveTimedOut << ")";
      message = os.str();
    }
    if (!message.empty()) break;
    ++i;
  }
  if (message.empty()) return {};
  // Abort the communicators first, so that no kernel keeps the GPU waiting while the process goes down.
  impl_->abort_locked();
  auto on_fail = impl_->on_fail;
  lock.unlock();
  int rank = 0, size = 1, initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  message = str_cat("omni-generate: error (rank ", rank, "/", size, "): ", message);
  on_fail(message);
  return message;
}

}  // namespace omni::dist
