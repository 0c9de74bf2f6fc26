// Collectives that never finish: a peer rank died, hangs, or the network failed. NCCL does not fail such a
// collective by itself; the kernels wait forever and so would every rank. The watchdog (one thread per
// process, PyTorch c10d's design) polls every collective in flight; when one fails asynchronously or has
// waited longer than --collective-timeout, it aborts every registered communicator (so no kernel keeps
// waiting on the GPU), prints one line naming the collective and its group, and ends every rank with exit 1.
#pragma once

#include <functional>
#include <string>

namespace omni::dist {

// kExiting: the CUDA runtime is unloading (main returned or exit() was called while a collective was still in
// flight); not a failure, the collective is simply no longer watched.
enum class PollResult { kPending, kDone, kFailed, kExiting };

// Seconds a collective may stay in flight (default 600). Process-wide.
void set_collective_timeout(double seconds);
double collective_timeout();

class CollectiveWatchdog {
 public:
  static CollectiveWatchdog& instance();

  // Watches one collective: `poll` says whether it finished, and on kFailed sets `*why`; `describe` names it
  // ("NCCL all_gather of 4096 bfloat16 on shard group (world ranks 0,1,2,3)") and is called only when it
  // fails, so that issuing a collective formats no text. Both are called from the watchdog thread, under the
  // watchdog's lock, until `poll` returns kDone or kExiting, or until retire_owner(owner) returns; they must
  // stay callable until then. `owner` is the id add_abort_hook gave the communicator's owner (kNoOwner: none).
  static constexpr int kNoOwner = -1;
  void watch(std::function<std::string()> describe, std::function<PollResult(std::string* why)> poll,
             int owner = kNoOwner);

  // Called (under the watchdog's lock) before the process is ended: ncclCommAbort of one communicator.
  // Returns an id, which also tags the communicator's collectives (watch) and is passed to retire_owner.
  // Each hook runs at most once; running it unregisters it.
  int add_abort_hook(std::function<void()> hook);
  // Unregisters a hook; false when it had already run (or never existed).
  bool remove_abort_hook(int id);

  // What a communicator's owner calls before destroying the communicator: drops every collective watched for
  // `owner` and its abort hook, and returns only once no poll is in progress, so that no poll of that
  // communicator runs during or after its destruction. Returns false when the hook had already run: the
  // communicator was aborted (freed by NCCL) and must be neither destroyed nor aborted again.
  bool retire_owner(int owner);

  // The error path (abort_all, the watchdog's own failures): marks the process failing, stops watching (the
  // collectives' communicators are about to be freed) and runs every abort hook still registered, once.
  void abort_communicators();

  // Polls every watched collective once, now. The thread calls this every few milliseconds; tests call it
  // directly. Returns the failure message, empty when none. Does nothing once the process is exiting (an
  // atexit handler stops the watchdog, so that it never polls or reports while the CUDA runtime unloads).
  std::string check_now();

  // What happens on a failure (default: dist::abort_all(1, message)); tests replace it.
  void set_fail_handler(std::function<void(const std::string& message)> handler);

  // Collectives being watched.
  size_t pending() const;

 private:
  CollectiveWatchdog();
  struct Impl;
  Impl* impl_;  // lives as long as the process (the thread may still run at exit)
};

}  // namespace omni::dist
