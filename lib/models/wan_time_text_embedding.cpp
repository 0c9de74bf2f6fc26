#include "models/wan_time_text_embedding.h"

#include <cmath>

#include "core/error.h"

namespace omni::models {

at::Tensor timestep_sinusoid(const at::Tensor& timesteps, int64_t dim) {
  OMNI_CHECK(timesteps.dim() == 1, "timestep_sinusoid expects a 1-D tensor, got ", timesteps.sizes());
  OMNI_CHECK(dim % 2 == 0, "timestep_sinusoid expects an even dim, got ", dim);
  const int64_t half = dim / 2;
  auto opts = at::TensorOptions().dtype(at::kFloat).device(timesteps.device());
  // Same float32 operation order as diffusers: (-ln(10000) * i) / half, then exp.
  auto exponent = at::arange(0, half, opts).mul(-std::log(10000.0)).div(static_cast<double>(half));  // [half]
  auto freqs = exponent.exp();                                                                       // [half]
  auto angles = timesteps.to(at::kFloat).unsqueeze(1) * freqs.unsqueeze(0);                          // [N, half]
  return at::cat({angles.cos(), angles.sin()}, 1);                                                   // [N, dim]
}

WanTimeTextEmbedding::WanTimeTextEmbedding(int64_t dim, int64_t freq_dim, int64_t text_dim)
    : dim_(dim), freq_dim_(freq_dim) {
  // Registration order follows the checkpoint's module order; names are the checkpoint keys.
  time_linear_1_ = child("time_embedder.linear_1", std::make_unique<wan::Linear>(freq_dim, dim, ParamDtype::kFloat32));
  time_linear_2_ = child("time_embedder.linear_2", std::make_unique<wan::Linear>(dim, dim, ParamDtype::kFloat32));
  time_proj_ = child("time_proj", std::make_unique<wan::Linear>(dim, 6 * dim));
  text_linear_1_ = child("text_embedder.linear_1", std::make_unique<wan::Linear>(text_dim, dim));
  text_linear_2_ = child("text_embedder.linear_2", std::make_unique<wan::Linear>(dim, dim));
}

ConditionEmbedding WanTimeTextEmbedding::forward(const at::Tensor& timestep, const at::Tensor& context,
                                                 at::ScalarType dtype) const {
  OMNI_CHECK(timestep.dim() == 1 || timestep.dim() == 2, "timestep must be [B] or [B, S], got ", timestep.sizes());
  const bool per_token = timestep.dim() == 2;
  auto sinusoid = timestep_sinusoid(timestep.flatten(), freq_dim_);  // [B*S or B, freq_dim] float32
  if (per_token) sinusoid = sinusoid.unflatten(0, {timestep.size(0), timestep.size(1)});  // [B, S, freq_dim]

  // time_embedder runs in float32 (kept so even in bfloat16 models); its output takes the activation dtype.
  auto temb = time_linear_2_->forward(at::silu(time_linear_1_->forward(sinusoid))).to(dtype);  // [B(, S), D]
  auto proj = time_proj_->forward(at::silu(temb));                                             // [B(, S), 6D]
  proj = proj.unflatten(-1, {6, dim_});                                                        // [B(, S), 6, D]

  auto text = text_linear_1_->forward(context.to(dtype));  // [B, L, D]
  text = text_linear_2_->forward(at::gelu(text, "tanh"));  // [B, L, D]
  return {temb, proj, text};
}

}  // namespace omni::models
