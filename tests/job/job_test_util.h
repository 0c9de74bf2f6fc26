// What the lib/job unit tests share: a scratch folder per test, the options as main resolves them, and the
// usage error a call gives.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "config/options.h"
#include "core/error.h"

namespace omni::job::test {

// A fresh folder for each test, removed after it.
class ScratchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string(info->test_suite_name()) + "." + info->name() + "." + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // Writes `text` to `name` in the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text;
    return path(name);
  }

  std::filesystem::path dir_;
};

// The options main resolves from `args` (the flags, without the program's name) over the T2V preset.
inline config::GenerateOptions resolve_args(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"omni-generate"};
  for (const auto& a : args) argv.push_back(a.c_str());
  return config::resolve_options(config::parse_command_line(static_cast<int>(argv.size()), argv.data()),
                                 "wan2.2-t2v-a14b");
}

// The message of the usage error (exit 2) `fn` throws, or `none` when it throws nothing.
inline std::string usage_error_of(const std::function<void()>& fn, const std::string& none = "") {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2) << e.what();
    return e.what();
  }
  return none;
}

}  // namespace omni::job::test
