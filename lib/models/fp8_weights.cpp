#include "models/fp8_weights.h"

#include <atomic>

#include "io/safetensors.h"
#include "models/module.h"

namespace omni::models {
namespace {

std::atomic<bool> g_fp8_matmul{false};

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

WeightHolding with_stored_float8(WeightHolding h, const io::Checkpoint& ckpt) {
  h.stored_float8.clear();
  for (const auto& name : ckpt.names())
    if (ckpt.float8_row_scales(name).defined()) h.stored_float8.insert(name);
  return h;
}

std::string float8_kept_reason(const ParamRef& p, const WeightHolding& h, int num_blocks) {
  if (p.scale == nullptr) return "not a Linear weight (embedding, norm, modulation table, patch embedding, bias)";
  if (h.stored_float8.count(p.name)) return "";  // float8 in the checkpoint
  if (!h.float8) return "--weight-dtype is the run dtype";
  // The block index and the layer family from the module path: the Wan transformer's "blocks.<i>.ffn." /
  // "blocks.<i>.attn1." / "blocks.<i>.attn2.", UMT5's "encoder.block.<i>.layer.1.DenseReluDense." /
  // "encoder.block.<i>.layer.0.SelfAttention.".
  std::string prefix;
  for (const char* candidate : {"blocks.", "encoder.block."})
    if (starts_with(p.name, candidate)) prefix = candidate;
  const size_t dot = prefix.empty() ? std::string::npos : p.name.find('.', prefix.size());
  if (dot == std::string::npos) return "outside the blocks (condition embedder, head, embedding)";
  const int block = std::stoi(p.name.substr(prefix.size(), dot - prefix.size()));
  if (block == 0 || block == num_blocks - 1) return "first or last block";
  const std::string rest = p.name.substr(dot + 1);
  const bool ffn = starts_with(rest, "ffn.") || starts_with(rest, "layer.1.DenseReluDense.");
  const bool attention =
      starts_with(rest, "attn1.") || starts_with(rest, "attn2.") || starts_with(rest, "layer.0.SelfAttention.");
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
