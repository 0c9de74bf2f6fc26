#include "dist/communicator.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "core/error.h"
#include "dist/mpi_check.h"
#include "dist/watchdog.h"

namespace omni::dist {
namespace {

std::atomic<bool> g_failing{false};

bool mpi_running() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

}  // namespace

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (initialized) {
    // Someone else (a test harness, an embedding program) owns MPI; only record what it provides.
    MPI_CHECK(MPI_Query_thread(&thread_level_));
    return;
  }
  int provided = MPI_THREAD_SINGLE;
  MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
  owns_ = true;
  thread_level_ = provided;
  // FUNNELED is enough when only the main thread calls MPI; SINGLE would forbid the threads LibTorch
  // itself starts from ever touching MPI-allocated state, which we cannot promise.
  OMNI_CHECK(provided >= MPI_THREAD_FUNNELED, "the MPI library provides thread level ", provided,
             " but omni needs at least MPI_THREAD_FUNNELED (", MPI_THREAD_FUNNELED, ")");
}

MpiEnvironment::~MpiEnvironment() {
  if (owns_ && mpi_running()) MPI_Finalize();
}

Communicator::Communicator(MPI_Comm comm, bool owned) : comm_(comm), owned_(owned) {
  if (comm_ == MPI_COMM_NULL) {
    owned_ = false;
    return;
  }
  // MPI_COMM_WORLD and MPI_COMM_SELF are predefined: freeing them is erroneous.
  if (comm_ == MPI_COMM_WORLD || comm_ == MPI_COMM_SELF) owned_ = false;
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

Communicator::~Communicator() {
  release();
}

Communicator::Communicator(Communicator&& other) noexcept
    : comm_(std::exchange(other.comm_, MPI_COMM_NULL)),
      owned_(std::exchange(other.owned_, false)),
      rank_(std::exchange(other.rank_, -1)),
      size_(std::exchange(other.size_, 0)) {}

Communicator& Communicator::operator=(Communicator&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = std::exchange(other.comm_, MPI_COMM_NULL);
    owned_ = std::exchange(other.owned_, false);
    rank_ = std::exchange(other.rank_, -1);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void Communicator::release() noexcept {
  // A communicator that outlives MPI_Finalize (a static, an exception unwinding past main's environment)
  // must not call into MPI; the handle dies with the library.
  if (owned_ && comm_ != MPI_COMM_NULL && mpi_running()) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
  owned_ = false;
  rank_ = -1;
  size_ = 0;
}

Communicator Communicator::world() {
  return Communicator(MPI_COMM_WORLD, false);
}

Communicator Communicator::split(int color, int key) const {
  OMNI_CHECK(valid(), "split() on a null communicator");
  MPI_Comm out = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(comm_, color < 0 ? MPI_UNDEFINED : color, key, &out));
  return Communicator(out, true);
}

Communicator Communicator::dup() const {
  OMNI_CHECK(valid(), "dup() on a null communicator");
  MPI_Comm out = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(comm_, &out));
  return Communicator(out, true);
}

void Communicator::barrier() const {
  OMNI_CHECK(valid(), "barrier() on a null communicator");
  MPI_CHECK(MPI_Barrier(comm_));
}

std::string Communicator::broadcast(const std::string& text, int root) const {
  int64_t length = static_cast<int64_t>(text.size());
  MPI_CHECK(MPI_Bcast(&length, 1, MPI_INT64_T, root, comm_));
  std::string out = rank_ == root ? text : std::string(static_cast<size_t>(length), '\0');
  if (length > 0) MPI_CHECK(MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, root, comm_));
  return out;
}

std::vector<std::string> Communicator::broadcast(const std::vector<std::string>& items, int root) const {
  // The lengths, then the bytes of all items one after the other.
  std::vector<int64_t> lengths;
  std::string bytes;
  if (rank_ == root)
    for (const auto& s : items) lengths.push_back(static_cast<int64_t>(s.size())), bytes += s;
  int64_t count = static_cast<int64_t>(lengths.size());
  MPI_CHECK(MPI_Bcast(&count, 1, MPI_INT64_T, root, comm_));
  lengths.resize(static_cast<size_t>(count));
  if (count > 0) MPI_CHECK(MPI_Bcast(lengths.data(), static_cast<int>(count), MPI_INT64_T, root, comm_));
  bytes = broadcast(bytes, root);
  std::vector<std::string> out;
  size_t at = 0;
  for (int64_t n : lengths) {
    out.push_back(bytes.substr(at, static_cast<size_t>(n)));
    at += static_cast<size_t>(n);
  }
  return out;
}

void Communicator::all_reduce_max(std::vector<int>& values) const {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT, MPI_MAX, comm_));
}

std::pair<double, int> Communicator::max_location(double value) const {
  struct {
    double value;
    int rank;
  } mine{value, rank_}, best{};
  MPI_CHECK(MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, comm_));
  return {best.value, best.rank};
}

void Communicator::gather_bytes(const void* mine, size_t bytes, void* all, int root) const {
  MPI_CHECK(MPI_Gather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, root, comm_));
}

void Communicator::all_gather_bytes(const void* mine, size_t bytes, void* all) const {
  MPI_CHECK(MPI_Allgather(mine, static_cast<int>(bytes), MPI_BYTE, all, static_cast<int>(bytes), MPI_BYTE, comm_));
}

std::vector<int> Communicator::world_ranks() const {
  OMNI_CHECK(valid(), "world_ranks() on a null communicator");
  std::vector<int> mine(size_), out(size_);
  for (int i = 0; i < size_; ++i) mine[i] = i;
  MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
  MPI_CHECK(MPI_Comm_group(comm_, &group));
  MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
  MPI_CHECK(MPI_Group_translate_ranks(group, size_, mine.data(), world_group, out.data()));
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  return out;
}

void mark_failing() noexcept {
  g_failing = true;
}

bool failing() noexcept {
  return g_failing;
}

void abort_all(int exit_code, const std::string& message) {
  mark_failing();
  if (!message.empty()) {
    std::fprintf(stderr, "%s\n", message.c_str());
    std::fflush(stderr);
  }
  // Before MPI_Abort: a communicator whose kernels wait on a peer would otherwise keep the GPU busy until the
  // launcher kills the process (each hook runs at most once; the watchdog may have run them already).
  CollectiveWatchdog::instance().abort_communicators();
  if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::exit(exit_code);
}

}  // namespace omni::dist
