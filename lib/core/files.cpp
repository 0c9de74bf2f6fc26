#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace omni {

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

int64_t file_size(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<int64_t>(st.st_size);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

std::string join_path(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

namespace {

// The live temporary files, readable from a signal handler: fixed slots of plain characters, each claimed with
// an atomic flag (no allocation, no lock). More files at once than slots are still removed on exceptions, only
// not on signals.
constexpr int kTempSlots = 16;
constexpr size_t kTempPathMax = 4096;
std::atomic<bool> g_slot_used[kTempSlots];
char g_slot_path[kTempSlots][kTempPathMax];

// The interrupt message, double-buffered: the handler reads the buffer g_message_current names, which is
// switched only after the other buffer is complete.
constexpr size_t kMessageMax = 1024;
char g_message[2][kMessageMax];
std::atomic<int> g_message_current{-1};

void remove_temp_files_and_reraise(int sig) {
  for (int i = 0; i < kTempSlots; ++i)
    if (g_slot_used[i].load()) ::unlink(g_slot_path[i]);  // unlink is async-signal-safe
  const int m = g_message_current.load();
  if (m >= 0) {
    const char* name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
    const char* parts[] = {"omni-generate: stopped by ", name, ": ", g_message[m], "\n"};
    for (const char* p : parts) {
      if (::write(2, p, std::strlen(p)) < 0) break;  // write and strlen are async-signal-safe
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

TempFile::TempFile(std::string path) : path_(std::move(path)) {
  if (path_.size() >= kTempPathMax) return;
  for (int i = 0; i < kTempSlots; ++i) {
    bool expected = false;
    if (g_slot_used[i].load() || !g_slot_used[i].compare_exchange_strong(expected, true)) continue;
    // A signal between the claim and this copy makes the handler unlink a stale name: one that was committed
    // (renamed away) or removed already, so nothing.
    std::memcpy(g_slot_path[i], path_.c_str(), path_.size() + 1);
    slot_ = i;
    break;
  }
}

TempFile::~TempFile() {
  if (!path_.empty()) ::unlink(path_.c_str());
  if (slot_ >= 0) g_slot_used[slot_].store(false);
}

void TempFile::committed() {
  if (slot_ >= 0) g_slot_used[slot_].store(false);
  slot_ = -1;
  path_.clear();
}

std::string temp_sibling(const std::string& path, const char* tag) {
  static std::atomic<int> counter{0};
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + name + "." + tag + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

void set_interrupt_message(const std::string& line) {
  if (line.empty()) {
    g_message_current.store(-1);
    return;
  }
  const int next = g_message_current.load() == 0 ? 1 : 0;
  const size_t n = std::min(line.size(), kMessageMax - 1);
  std::memcpy(g_message[next], line.data(), n);
  g_message[next][n] = '\0';
  g_message_current.store(next);
}

void install_temp_file_cleanup() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) std::signal(sig, remove_temp_files_and_reraise);
}

void commit_file(const std::string& tmp, const std::string& path, bool overwrite) {
  if (!overwrite) {
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return;
    const int err = errno;
    if (err != EINVAL && err != ENOSYS) std::remove(tmp.c_str());
    OMNI_CHECK_USAGE(err != EEXIST, "output file '", path, "' already exists; pass --overwrite to replace it");
    OMNI_CHECK(err == EINVAL || err == ENOSYS, "cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) {
      std::remove(tmp.c_str());
      OMNI_FAIL_USAGE("output file '", path, "' already exists; pass --overwrite to replace it");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    OMNI_FAIL("cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
}

void write_file_atomically(const std::string& path, const std::vector<std::pair<const void*, size_t>>& chunks,
                           bool overwrite) {
  TempFile temp(temp_sibling(path, "partial"));
  const std::string& tmp = temp.path();
  FILE* f = std::fopen(tmp.c_str(), "wb");
  OMNI_CHECK(f != nullptr, "cannot create '", tmp, "': ", std::strerror(errno));
  bool ok = true;
  for (const auto& [data, size] : chunks) {
    if (size > 0 && std::fwrite(data, 1, size, f) != size) {
      ok = false;
      break;
    }
  }
  // On disk before the rename makes it visible under its final name.
  ok = ok && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  const int saved_errno = errno;
  ok = (std::fclose(f) == 0) && ok;
  OMNI_CHECK(ok, "cannot write '", tmp, "': ", std::strerror(saved_errno ? saved_errno : errno));
  commit_file(tmp, path, overwrite);
  temp.committed();
}

void write_file_atomically(const std::string& path, const std::string& text, bool overwrite) {
  write_file_atomically(path, {{text.data(), text.size()}}, overwrite);
}

}  // namespace omni
