#include "models/fp8_weights.h"

#include <algorithm>
#include <atomic>

#include "io/safetensors.h"
#include "models/module.h"

namespace omni::models {
namespace {

std::atomic<bool> g_fp8_matmul{false};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

// The block index and the rest of the name of a parameter of a numbered block: the Wan transformer's
// "blocks.<i>.ffn." / "blocks.<i>.attn1." / "blocks.<i>.attn2." (S2V's "blocks.<i>.self_attn." / "cross_attn."), UMT5's
// "encoder.block.<i>.layer.1.DenseReluDense." / "encoder.block.<i>.layer.0.SelfAttention.". -1 for every other
// parameter (VACE's vace_blocks, Animate's face_adapter, the root's).
int block_index(const std::string& name, std::string* rest = nullptr) {
  std::string prefix;
  for (const char* candidate : {"blocks.", "encoder.block."})
    if (starts_with(name, candidate)) prefix = candidate;
  const size_t dot = prefix.empty() ? std::string::npos : name.find('.', prefix.size());
  if (dot == std::string::npos) return -1;
  if (rest) *rest = name.substr(dot + 1);
  return std::stoi(name.substr(prefix.size(), dot - prefix.size()));
}

}  // namespace

WeightHolding with_stored_float8(WeightHolding h, const io::Checkpoint& ckpt) {
  h.stored_float8.clear();
  for (const auto& name : ckpt.names())
    if (ckpt.float8_row_scales(name).defined()) h.stored_float8.insert(name);
  return h;
}

int numbered_blocks(const std::vector<ParamRef>& params) {
  int last = -1;
  for (const auto& p : params) last = std::max(last, block_index(p.name));
  return last + 1;
}

std::string float8_kept_reason(const ParamRef& p, const WeightHolding& h, int num_blocks) {
  if (p.scale == nullptr) return "not a Linear weight (embedding, norm, modulation table, patch embedding, bias)";
  if (h.stored_float8.count(p.name)) return "";  // float8 in the checkpoint
  if (!h.float8) return "--weight-dtype is the run dtype";
  // The block index and the layer family from the module path.
  std::string rest;
  const int block = block_index(p.name, &rest);
  if (block < 0) return "outside the blocks (condition embedder, head, embedding, VACE blocks, face adapters)";
  if (block == 0 || block == num_blocks - 1) return "first or last block";
  const bool ffn = starts_with(rest, "ffn.") || starts_with(rest, "layer.1.DenseReluDense.");
  // Diffusers' attn1/attn2, Wan's own self_attn/cross_attn (Wan2.2-S2V's blocks keep Wan's names), UMT5's.
  const bool attention = starts_with(rest, "attn1.") || starts_with(rest, "attn2.") ||
                         starts_with(rest, "self_attn.") || starts_with(rest, "cross_attn.") ||
                         starts_with(rest, "layer.0.SelfAttention.");
  switch (h.layers) {
    case Fp8Layers::kFfn:
      if (!ffn) return "not a feed-forward layer (--fp8-layers ffn)";
      break;
    case Fp8Layers::kAttention:
      if (!attention) return "not an attention layer (--fp8-layers attention)";
      break;
    case Fp8Layers::kAll:
      break;
  }
  return "";
}

at::ScalarType held_dtype(const ParamRef& p, at::ScalarType model_dtype, const WeightHolding& h, int num_blocks) {
  if (float8_kept_reason(p, h, num_blocks).empty()) return at::kFloat8_e4m3fn;
  return resolve_param_dtype(p.dtype_rule, model_dtype);
}

void set_fp8_matmul(bool on) {
  g_fp8_matmul = on;
}

bool fp8_matmul() {
  return g_fp8_matmul;
}

}  // namespace omni::models
