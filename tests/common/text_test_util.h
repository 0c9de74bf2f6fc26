// Helpers shared by the text tests: fixture paths and tensors, and the common ones (tests/common/test_util.h:
// temporary folders, checks on omni::Error).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::text_testing {

inline const char* const kCases[] = {"t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"};

using test_util::case_dir;
using test_util::expect_error;
using test_util::TempDir;

inline std::string tokenizer_dir(const std::string& name) {
  return case_dir(name) + "/model/tokenizer";
}
inline std::string text_encoder_dir(const std::string& name) {
  return case_dir(name) + "/model/text_encoder";
}
inline nlohmann::json case_json(const std::string& name) {
  return io::read_json(case_dir(name) + "/case.json");
}
inline at::Tensor expected(const std::string& name, const std::string& key) {
  return io::SafetensorsFile(case_dir(name) + "/expected.safetensors").read(key);
}

using test_util::max_abs_err;

}  // namespace omni::text_testing
