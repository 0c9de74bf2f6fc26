// Helpers shared by the scheduler tests: fixture paths and keys, the error metric, and the common ones
// (tests/common/test_util.h).
#pragma once

#include <ATen/ATen.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "io/json_file.h"
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

// max |a - b| / max |b| (float64), the relative error of a whole tensor against its reference.
inline double max_rel_error(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor x = a.to(at::kCPU, at::kDouble);
  const at::Tensor y = b.to(at::kCPU, at::kDouble);
  if (x.sizes() != y.sizes()) return 1e30;
  const double scale = std::max(y.abs().max().item<double>(), 1e-30);
  return (x - y).abs().max().item<double>() / scale;
}

}  // namespace omni::sched::testing
