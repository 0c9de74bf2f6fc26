#include "models/wan_vace_block.h"

#include <memory>

#include "core/error.h"

namespace omni::models {

WanVaceBlock::WanVaceBlock(int64_t dim, int64_t ffn_dim, int64_t heads, bool cross_attn_norm, double eps,
                           bool input_projection)
    : WanTransformerBlock(dim, ffn_dim, heads, cross_attn_norm, eps) {
  if (input_projection) proj_in_ = child("proj_in", std::make_unique<wan::Linear>(dim, dim));
  proj_out_ = child("proj_out", std::make_unique<wan::Linear>(dim, dim));
}

std::pair<at::Tensor, at::Tensor> WanVaceBlock::forward_vace(const at::Tensor& control, const at::Tensor& x,
                                                             const at::Tensor& context, const at::Tensor& timestep_proj,
                                                             const TokenRuns& runs, const RotaryEmbedding& rope,
                                                             AttentionBackend* backend) const {
  OMNI_CHECK(control.sizes() == x.sizes(), "VACE block: the context ", control.sizes(), " and the video's tokens ",
             x.sizes(), " differ in shape");
  // diffusers: control = proj_in(control) + hidden_states, in the activation dtype.
  const at::Tensor c = proj_in_ != nullptr ? proj_in_->forward(control) + x : control;  // [B, S, D]
  at::Tensor out = forward(c, context, timestep_proj, runs, rope, backend);             // [B, S, D]
  at::Tensor hint = proj_out_->forward(out);                                            // [B, S, D]
  return {std::move(hint), std::move(out)};
}

}  // namespace omni::models
