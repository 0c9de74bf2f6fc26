#include "core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
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

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
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
  const size_t slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "." + name + ".partial-" + std::to_string(::getpid());
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
  if (!ok) {
    std::remove(tmp.c_str());
    OMNI_FAIL("cannot write '", tmp, "': ", std::strerror(saved_errno ? saved_errno : errno));
  }
  commit_file(tmp, path, overwrite);
}

void write_file_atomically(const std::string& path, const std::string& text, bool overwrite) {
  write_file_atomically(path, {{text.data(), text.size()}}, overwrite);
}

}  // namespace omni
