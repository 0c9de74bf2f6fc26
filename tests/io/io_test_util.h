// Helpers shared by the io tests: the common ones (tests/common/test_util.h), folders, raw safetensors bytes
// and input-error checks.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>

#include "core/error.h"
#include "test_util.h"

namespace omni::io::testing {

using test_util::expect_error;
using test_util::read_file;
using test_util::TempDir;
using test_util::write_file;

inline void make_dirs(const std::string& path) {
  ASSERT_EQ(std::system(("mkdir -p '" + path + "'").c_str()), 0);
}

// A safetensors file from a literal header and data section (the length prefix is computed here unless given).
inline std::string safetensors_bytes(const std::string& header, const std::string& data, int64_t header_len = -1) {
  uint64_t n = header_len < 0 ? header.size() : static_cast<uint64_t>(header_len);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return out + header + data;
}

inline void expect_input_error(const std::function<void()>& fn, std::initializer_list<std::string> parts) {
  expect_error(fn, ExitCode::kInput, parts);
}

}  // namespace omni::io::testing
