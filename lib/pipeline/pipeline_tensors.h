// Small helpers the Wan pipeline's translation units share (wan_pipeline.cpp, wan_animate_pipeline.cpp,
// wan_s2v_pipeline.cpp); not part of the pipeline's interface.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "core/memory.h"
#include "dist/device.h"

namespace omni::pipeline {

// The names --save-tensors and the dumps number things by: "step07", "call12", "clip01", "seg00".
inline std::string numbered(const char* prefix, int index) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%02d", prefix, index);
  return buf;
}

// A tensor as --save-tensors keeps it: float32, contiguous, on the host.
inline at::Tensor to_float_cpu(const at::Tensor& t) {
  return t.detach().to(at::kCPU).to(at::kFloat).contiguous();
}

// The peak the process has reached since the last reset: device bytes on a GPU, resident bytes on the CPU.
inline int64_t peak_since_reset(const at::Device& dev) {
  return dev.is_cpu() ? peak_rss_since_reset_bytes() : dist::peak_device_bytes_since_reset(dev);
}

}  // namespace omni::pipeline
