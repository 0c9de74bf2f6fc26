// Deliberately broken checkpoints for the loader tests: a copy of a component folder (config.json and its
// weights) whose tensor list has been edited (a tensor dropped, added or reshaped).
#pragma once

#include <ATen/ATen.h>

#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "io/safetensors.h"

namespace omni::test_util {

using TensorList = std::vector<std::pair<std::string, at::Tensor>>;

// Copies `src_dir`/config.json to `dst_dir` and writes `dst_dir`/diffusion_pytorch_model.safetensors holding the
// source checkpoint's tensors after `edit`.
inline void write_edited_component(const std::string& src_dir, const std::string& dst_dir,
                                   const std::function<void(TensorList&)>& edit) {
  std::filesystem::copy_file(src_dir + "/config.json", dst_dir + "/config.json",
                             std::filesystem::copy_options::overwrite_existing);
  auto ckpt = io::Checkpoint::open(src_dir);
  TensorList tensors;
  for (const auto& name : ckpt.names()) tensors.emplace_back(name, ckpt.read(name));
  edit(tensors);
  io::write_safetensors(dst_dir + "/diffusion_pytorch_model.safetensors", tensors);
}

}  // namespace omni::test_util
