// Small filesystem predicates shared by the layers (stat-based; no exceptions), and the one atomic write.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace omni {

bool is_dir(const std::string& path);
bool is_file(const std::string& path);  // a regular file
bool ends_with(const std::string& s, const std::string& suffix);

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
