// WanVACETransformerBlock (diffusers' transformer_wan_vace.py): a WanTransformerBlock run over the VACE context
// rather than the video's tokens, with a projection in (the first VACE block only: proj_in(context) + the video's
// patch-embedded tokens) and one out (proj_out: the hint the paired main block adds to its output). Its
// attention, feed-forward and modulation are WanTransformerBlock's, parameter for parameter, so it is one.
//
// Module tree under vace_blocks.<k>.: WanTransformerBlock's (attn1, attn2, ffn, norm2, scale_shift_table), and
// proj_in.{weight,bias} [D, D] (k == 0), proj_out.{weight,bias} [D, D].
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

#include "models/wan_transformer_block.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

class WanVaceBlock : public WanTransformerBlock {
 public:
  WanVaceBlock(int64_t dim, int64_t ffn_dim, int64_t heads, bool cross_attn_norm, double eps, bool input_projection);

  // control: [B, S, D] the VACE context (this rank's tokens); x: the video's patch-embedded tokens [B, S, D],
  // taken by the first block only; the rest as WanTransformerBlock::forward. Returns {hint, control}: the hint
  // proj_out(control') for the paired main block and the context control' the next VACE block takes, [B, S, D]
  // each in control's dtype.
  std::pair<at::Tensor, at::Tensor> forward_vace(const at::Tensor& control, const at::Tensor& x,
                                                 const at::Tensor& context, const at::Tensor& timestep_proj,
                                                 const TokenRuns& runs, const RotaryEmbedding& rope,
                                                 AttentionBackend* backend) const;

 private:
  wan::Linear* proj_in_ = nullptr;  // first block only
  wan::Linear* proj_out_;
};

}  // namespace omni::models
