// The MPI environment and an RAII communicator (docs/DESIGN.md section 4; c10d / TensorRT-LLM style).
//
// MpiEnvironment initializes MPI once per process and finalizes it only if it was the one that
// initialized it, so that tests and embedding programs that already called MPI_Init keep working.
// Communicator owns an MPI_Comm (freed on destruction, before MPI_Finalize) and makes new ones with
// split() and dup(); it is movable, never copyable, so two owners can never free one handle twice.
#pragma once

#include <mpi.h>

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace omni::dist {

class MpiEnvironment {
 public:
  // Asks for MPI_THREAD_MULTIPLE (a progress or loader thread may call MPI) and accepts FUNNELED when the
  // library offers less than MULTIPLE; anything below FUNNELED is an error. argc/argv may be null.
  MpiEnvironment(int* argc = nullptr, char*** argv = nullptr);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  int thread_level() const { return thread_level_; }
  // True when this object called MPI_Init_thread and will call MPI_Finalize.
  bool owns_mpi() const { return owns_; }

 private:
  int thread_level_ = MPI_THREAD_SINGLE;
  bool owns_ = false;
};

class Communicator {
 public:
  Communicator() = default;  // null: valid() is false
  // Takes ownership of `comm` when `owned` (it is freed on destruction); MPI_COMM_WORLD is never owned.
  Communicator(MPI_Comm comm, bool owned);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  Communicator(Communicator&& other) noexcept;
  Communicator& operator=(Communicator&& other) noexcept;

  // A non-owning handle on MPI_COMM_WORLD.
  static Communicator world();

  bool valid() const { return comm_ != MPI_COMM_NULL; }
  MPI_Comm comm() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }

  // Collective over this communicator: ranks with the same color form a new communicator, ordered by key
  // (ties by rank). A negative color (MPI_UNDEFINED) returns a null communicator.
  Communicator split(int color, int key) const;
  // Collective: a new communicator over the same ranks with its own message space, so a library's
  // traffic never matches a caller's messages.
  Communicator dup() const;
  void barrier() const;
  // The MPI_COMM_WORLD rank of each member, in this communicator's rank order.
  std::vector<int> world_ranks() const;
  // Collective: `root`'s `text` on every rank (a decision one rank makes for all, e.g. which outputs exist).
  std::string broadcast(const std::string& text, int root = 0) const;
  // Collective: `root`'s `items` on every rank, each string whole (any bytes, newlines included).
  std::vector<std::string> broadcast(const std::vector<std::string>& items, int root = 0) const;
  // Collective: the element-wise maximum of `values` over the ranks, in place (same length on every rank).
  void all_reduce_max(std::vector<int>& values) const;
  // Collective: the rank holding the largest `value` (the lowest such rank on ties) and that value.
  std::pair<double, int> max_location(double value) const;
  // Collective: every rank's `value`, in rank order, on `root` (empty elsewhere). T is a plain struct; all ranks
  // run the same binary, so its bytes mean the same everywhere.
  // Collective: every rank's `value`, in rank order, on every rank.
  template <typename T>
  std::vector<T> all_gather(const T& value) const {
    static_assert(std::is_trivially_copyable_v<T>, "all_gather() sends a struct's bytes");
    std::vector<T> out(static_cast<size_t>(size_));
    all_gather_bytes(&value, sizeof(T), out.data());
    return out;
  }
  template <typename T>
  std::vector<T> gather(const T& value, int root = 0) const {
    static_assert(std::is_trivially_copyable_v<T>, "gather() sends a struct's bytes");
    std::vector<T> out(rank_ == root ? static_cast<size_t>(size_) : 0);
    gather_bytes(&value, sizeof(T), out.data(), root);
    return out;
  }

 private:
  void release() noexcept;
  void gather_bytes(const void* mine, size_t bytes, void* all, int root) const;
  void all_gather_bytes(const void* mine, size_t bytes, void* all) const;

  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owned_ = false;
  int rank_ = -1;
  int size_ = 0;
};

// Fatal path for errors seen by only some ranks: prints `message` from this rank to stderr, marks the process
// failing, aborts every communicator registered with the CollectiveWatchdog (so no kernel keeps waiting on a
// peer) and brings every rank of MPI_COMM_WORLD down with `exit_code`, so that no rank is left waiting in a
// collective. Falls back to std::exit when MPI is not running.
[[noreturn]] void abort_all(int exit_code, const std::string& message);

// The process is going down on an error. Set by abort_all, by the watchdog before it aborts communicators, and
// by main's catch block, before anything is torn down; owners of communicators (ProcessGroupNccl) then abort
// them instead of draining their streams, which would wait forever on peers stuck in a collective. Sticky.
void mark_failing() noexcept;
bool failing() noexcept;

}  // namespace omni::dist
