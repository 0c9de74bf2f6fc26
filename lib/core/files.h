// Small filesystem predicates shared by the layers (stat-based; no exceptions), and the one atomic write.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace omni {

bool is_dir(const std::string& path);
bool is_file(const std::string& path);       // a regular file
int64_t file_size(const std::string& path);  // bytes of a regular file, 0 when it is none
bool ends_with(const std::string& s, const std::string& suffix);
bool starts_with(const std::string& s, const std::string& prefix);
// dir/name, without doubling a trailing slash (name alone when dir is empty).
std::string join_path(const std::string& dir, const std::string& name);

// A temporary file being written: removed when the object goes away uncommitted (an exception), and - while it
// exists - by the handler of install_temp_file_cleanup() when a signal ends the process (mpirun's SIGTERM when a
// peer rank aborts, Slurm's at preemption), so that no partial file outlives a killed run. SIGKILL cannot be
// caught: its leftovers are hidden names (".NAME.partial-PID-N") that nothing takes for an output.
class TempFile {
 public:
  explicit TempFile(std::string path);
  ~TempFile();
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  // After the final rename: nothing left to remove.
  void committed();

 private:
  std::string path_;
  int slot_ = -1;  // in the signal handler's table, or -1
};

// A hidden name beside `path` that nothing else uses: "DIR/.NAME.TAG-PID-N".
std::string temp_sibling(const std::string& path, const char* tag);

// Installs handlers for SIGTERM, SIGINT and SIGHUP that remove the live TempFiles, print the interrupt
// message (if any) and then end the process by the same signal (its default action: exit status 128 + signal,
// 143 for SIGTERM, 130 for SIGINT). Call once, early in main().
void install_temp_file_cleanup();
// The one line the handler prints to stderr when a signal ends the process (say what is kept and how to
// resume); "" prints nothing. Safe to call at any time from the main thread.
void set_interrupt_message(const std::string& line);

// The last step of every atomic write: renames the finished `tmp` onto `path`. Without `overwrite` an existing
// `path` is never replaced, even one that appeared after the up-front checks (RENAME_NOREPLACE; filesystems
// without it get a check just before a plain rename): a usage error naming it and --overwrite. `tmp` is
// removed when the rename fails.
void commit_file(const std::string& tmp, const std::string& path, bool overwrite);

// Writes `chunks` one after the other to a temporary file beside `path`, syncs it, and commits it: a reader
// (or a crash) never sees a half-written `path`.
void write_file_atomically(const std::string& path, const std::vector<std::pair<const void*, size_t>>& chunks,
                           bool overwrite);
// The same for one piece of text (a JSON sidecar, a report, an index).
void write_file_atomically(const std::string& path, const std::string& text, bool overwrite);

}  // namespace omni
