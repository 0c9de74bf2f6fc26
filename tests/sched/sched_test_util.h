// Helpers shared by the scheduler tests: fixture paths and keys, the error metric, and the common ones
// (tests/common/test_util.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "io/json_file.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::sched::testing {

using test_util::expect_error;
using test_util::reference_dir;

// The scheduler_config.json of a pipeline case's model folder.
inline nlohmann::json scheduler_config(const std::string& case_name) {
  return io::read_json(reference_dir() + "/" + case_name + "/model/scheduler/scheduler_config.json");
}

// The fixture key of run `run`'s tensor `what` at step `i`, e.g. "<run>.sample07" for step 7.
inline std::string step_key(const std::string& run, const char* what, int i) {
  char idx[8];
  std::snprintf(idx, sizeof(idx), "%02d", i);
  return run + "." + what + idx;
}

using test_util::max_rel_err;

}  // namespace omni::sched::testing
