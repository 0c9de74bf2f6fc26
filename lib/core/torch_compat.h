// Thin wrappers over LibTorch calls whose exact numerics the reference fixes (PyTorch 2.x; docs/DESIGN.md section 7).
#pragma once

#include <ATen/ATen.h>
#include <ATen/SDPBackend.h>
#include <ATen/record_function.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace omni::compat {

// The name of an at::SDPBackend (at::_fused_sdp_choice's answer), as logs and the GPU check's table spell it.
inline std::string sdp_backend_name(int64_t choice) {
  switch (static_cast<at::SDPBackend>(choice)) {
    case at::SDPBackend::error:
      return "error";
    case at::SDPBackend::math:
      return "math";
    case at::SDPBackend::flash_attention:
      return "flash";
    case at::SDPBackend::efficient_attention:
      return "mem-efficient";
    case at::SDPBackend::cudnn_attention:
      return "cudnn";
    case at::SDPBackend::overrideable:
      return "overrideable";
  }
  return "unknown(" + std::to_string(choice) + ")";
}

// softmax(q k^T * scale) v over [B, H, S, d] tensors, no mask: LibTorch's fused kernel (flash / cuDNN /
// memory-efficient on CUDA, the flash kernel on the CPU), as diffusers' F.scaled_dot_product_attention.
inline at::Tensor scaled_dot_product_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                                               std::optional<double> scale = std::nullopt) {
  return at::scaled_dot_product_attention(q, k, v, /*attn_mask=*/{}, /*dropout_p=*/0.0, /*is_causal=*/false, scale);
}

// x * rsqrt(mean(x^2, -1) + eps) * weight with the statistics in float32 and the result in x's dtype: LibTorch's
// rms_norm, which torch.nn.RMSNorm (diffusers' norm_q / norm_k) calls.
inline at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  return at::rms_norm(x, {x.size(-1)}, weight, eps);
}

// Shows one of our own kernels (a loop or a CUDA launch that bypasses ATen's dispatcher) to ATen's operator
// observers, the profiler and tools/bench/block_traffic, as an operator `name` with these tensor inputs (the
// defined ones) and,
// once outputs() is called, outputs. Costs nothing when no observer is active.
class RecordedOp {
 public:
  RecordedOp(const char* name, std::initializer_list<at::Tensor> inputs) : record_(at::RecordScope::FUNCTION) {
    if (!record_.isActive()) return;
    for (const auto& t : inputs)
      if (t.defined()) inputs_.emplace_back(t);
    record_.before(name, c10::ArrayRef<const c10::IValue>(inputs_.data(), inputs_.size()));
  }
  void outputs(const at::Tensor& out) {
    if (record_.isActive() && record_.needsOutputs()) record_.setOutputs(std::vector<c10::IValue>{out});
  }

 private:
  at::RecordFunction record_;
  std::vector<c10::IValue> inputs_;  // RecordFunction keeps a view of them
};

}  // namespace omni::compat
