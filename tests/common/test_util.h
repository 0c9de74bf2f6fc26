// Helpers shared by the GoogleTest suites of several areas: temporary folders, whole-file reads and writes,
// fixture paths and checks on omni::Error. Each area's own *_test_util.h brings these into its namespace.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <stdexcept>
#include <string>
#include <system_error>

#include "core/error.h"

namespace omni::test_util {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it when the object goes away.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "omni_test") {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    if (!made) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;  // a destructor must not throw; a leftover temporary folder is harmless
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << "cannot write " << path;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The reference fixtures (tests/data/reference) and one case's folder in it, e.g. case_dir("t2v-a14b-tiny").
inline std::string reference_dir() {
  return std::string(OMNI_TEST_DATA_DIR) + "/reference";
}
inline std::string case_dir(const std::string& name) {
  return reference_dir() + "/" + name;
}

// The folder a reference script wrote its cases into, from $`env` (set by tests/CMakeLists.txt's
// omni_reference_gtest). Unset is a failure, not a skip (a skipped test proves nothing): "/nonexistent" then.
inline std::string reference_cases(const char* env, const char* script) {
  const char* dir = std::getenv(env);
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << env << " is not set (ctest sets it; tools/reference/" << script << " writes the cases)";
    return "/nonexistent";
  }
  return dir;
}

// Runs `fn`, expects an omni::Error with `code` whose message contains every string in `parts`.
inline void expect_error(const std::function<void()>& fn, ExitCode code, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an omni::Error (exit " << static_cast<int>(code) << "), nothing was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), static_cast<int>(code)) << e.what();
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an omni::Error, got another exception: " << e.what();
  }
}

}  // namespace omni::test_util
