// A LoRA file and the strength it is merged with (models/lora.h merges it): a header without ATen, so that the
// CLI's options (--lora FILE[:SCALE]) and the pipeline's settings hold it as it is.
#pragma once

#include <string>

namespace omni::models {

struct LoraSource {
  std::string path;  // a .safetensors file, or a folder holding pytorch_lora_weights.safetensors
  double scale = 1.0;
};

}  // namespace omni::models
