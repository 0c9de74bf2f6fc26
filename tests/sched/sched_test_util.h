// Helpers shared by the scheduler tests: fixture paths and the error metric.
#pragma once

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include <string>

#include "io/json_file.h"

namespace omni::sched::testing {

inline std::string reference_dir() { return std::string(OMNI_TEST_DATA_DIR) + "/reference"; }

// The scheduler_config.json of a pipeline case's model folder.
inline nlohmann::json scheduler_config(const std::string& case_name) {
  return io::read_json(reference_dir() + "/" + case_name + "/model/scheduler/scheduler_config.json");
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
