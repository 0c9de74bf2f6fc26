// Helpers shared by the text tests: fixture paths and tensors, temporary folders, checks on omni::Error.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::text_testing {

inline const char* const kCases[] = {"t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"};

inline std::string case_dir(const std::string& name) { return std::string(OMNI_TEST_DATA_DIR) + "/reference/" + name; }
inline std::string tokenizer_dir(const std::string& name) { return case_dir(name) + "/model/tokenizer"; }
inline std::string text_encoder_dir(const std::string& name) { return case_dir(name) + "/model/text_encoder"; }
inline nlohmann::json case_json(const std::string& name) { return io::read_json(case_dir(name) + "/case.json"); }
inline at::Tensor expected(const std::string& name, const std::string& key) {
  return io::SafetensorsFile(case_dir(name) + "/expected.safetensors").read(key);
}

// A fresh folder under $TMPDIR (or /tmp), removed with its contents at the end of the scope.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/omni_text_test_XXXXXX";
    char* made = ::mkdtemp(tmpl.data());
    if (!made) throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = made;
  }
  ~TempDir() { (void)std::system(("rm -rf '" + path_ + "'").c_str()); }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Runs `fn`, expects an omni::Error with `code` whose message contains every one of `needles`.
inline void expect_error(const std::function<void()>& fn, ExitCode code, std::initializer_list<std::string> needles) {
  try {
    fn();
    ADD_FAILURE() << "expected an omni::Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << "'" << n << "' not in: " << e.what();
  }
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

}  // namespace omni::text_testing
