// Named intermediate tensors for --dump-tensors (llama.cpp's habit: a mismatch is located by comparing dumps
// against a reference, not by guessing). Names follow the reference fixtures where they exist
// (prompt.last_hidden_state, callNN.hidden_states / .timestep / .encoder_hidden_states / .out, vae_decode.in,
// ...), so that `omni-compare dump.safetensors expected.safetensors` lines them up.
//
// Off by default; when off, dump() returns before touching the tensor. DumpScope prefixes names ("call03" +
// "blocks.7" -> "call03.blocks.7"), so a model need not know which call of the pipeline it is in.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

namespace omni::debug {

void enable_dumps(bool on);
bool dumps_enabled();
// Stores a detached CPU copy under the current scope's prefix (floating types as float32, others as they are).
// A name dumped twice keeps the last value.
void dump(const std::string& name, const at::Tensor& tensor);
// Everything dumped since the last call, in dump order; clears the store.
std::vector<std::pair<std::string, at::Tensor>> take_dumps();

class DumpScope {
 public:
  explicit DumpScope(const std::string& prefix);
  ~DumpScope();
  DumpScope(const DumpScope&) = delete;
  DumpScope& operator=(const DumpScope&) = delete;
};

}  // namespace omni::debug
