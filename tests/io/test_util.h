// Helpers shared by the io tests: temporary folders, raw file writing and checks on omni::Error.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>

#include "core/error.h"

namespace omni::io::testing {

// A fresh folder under $TMPDIR (or /tmp), removed with everything in it when the object goes away.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/omni_io_test_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    if (!made) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = made;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
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

inline void make_dirs(const std::string& path) { ASSERT_EQ(std::system(("mkdir -p '" + path + "'").c_str()), 0); }

// A safetensors file from a literal header and data section (the length prefix is computed here unless given).
inline std::string safetensors_bytes(const std::string& header, const std::string& data, int64_t header_len = -1) {
  uint64_t n = header_len < 0 ? header.size() : static_cast<uint64_t>(header_len);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

// Runs `fn`, expects an omni::Error with `code` whose message contains every string in `parts`.
inline void expect_error(const std::function<void()>& fn, ExitCode code, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "expected an omni::Error, nothing was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), static_cast<int>(code)) << e.what();
    const std::string msg = e.what();
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected an omni::Error, got another exception: " << e.what();
  }
}

inline void expect_input_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  expect_error(fn, ExitCode::kInput, parts);
}

}  // namespace omni::io::testing
