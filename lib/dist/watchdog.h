// Collectives that never finish: a peer rank died, hangs, or the network failed. NCCL does not fail such a
// collective by itself; the kernels wait forever and so would every rank. The watchdog (one thread per
// process, PyTorch c10d's design) polls every collective in flight; when one fails asynchronously or has
// waited longer than --collective-timeout, it aborts every registered communicator (so no kernel keeps
// waiting on the GPU), prints one line naming the collective and its group, and ends every rank with exit 1.
#pragma once

#include <functional>
#include <string>

namespace omni::dist {

enum class PollResult { kPending, kDone, kFailed };

// Seconds a collective may stay in flight (default 600). Process-wide.
void set_collective_timeout(double seconds);
double collective_timeout();

class CollectiveWatchdog {
 public:
  static CollectiveWatchdog& instance();

  // Watches one collective: `poll` says whether it finished, and on kFailed sets `*why`; `describe` names it
  // ("NCCL all_gather of 4096 bfloat16 on shard group (world ranks 0,1,2,3)") and is called only when it
  // fails, so that issuing a collective formats no text. Both are called from the watchdog thread until
  // `poll` returns kDone and must stay callable until then.
  void watch(std::function<std::string()> describe, std::function<PollResult(std::string* why)> poll);

  // Called (under the watchdog's lock) before the process is ended: ncclCommAbort of one communicator.
  // Returns an id for remove_abort_hook, which the communicator's owner calls before destroying it.
  int add_abort_hook(std::function<void()> hook);
  void remove_abort_hook(int id);

  // Polls every watched collective once, now. The thread calls this every few milliseconds; tests call it
  // directly. Returns the failure message, empty when none.
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
