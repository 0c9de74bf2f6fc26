// WanTransformer3DModel (diffusers), as the Wan2.2 checkpoints use it: T2V-A14B / I2V-A14B experts (scalar
// timesteps) and TI2V-5B (per-token timesteps, expand_timesteps). No CLIP image branch.
//
// HSDP units: the root (patch_embedding, condition_embedder, proj_out, scale_shift_table) and blocks.0..N-1.
// forward() is prepare() -> run_block() for each block -> finish(); a sequence-parallel caller can run the
// stages itself, slicing the tokens, the per-token modulation and the rope tables between prepare() and the
// blocks, and plugging its AttentionBackend into each block.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/wan_attention.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_time_text_embedding.h"
#include "models/wan_transformer_block.h"
#include "models/wan_transformer_config.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

// What the blocks consume, produced by prepare().
struct WanTransformerState {
  at::Tensor tokens;              // [B, S, D] patch-embedded video, activation dtype
  ConditionEmbedding cond;        // temb, timestep_proj, projected context
  RotaryEmbedding rope;           // [S, d/2] tables
  std::array<int64_t, 3> grid{};  // post-patch (frames, height, width); S = product
  int64_t batch = 0;
};

class WanTransformer3DModel : public Module {
 public:
  // An unloaded model of `config` whose compute dtype is `dtype` (float32 or bfloat16; float16 also works
  // but is not what the reference runs). Parameters are empty slots until load_state() or HSDP fills them.
  explicit WanTransformer3DModel(const WanTransformerConfig& config, at::ScalarType dtype = at::kFloat);

  // Reads <component_dir>/config.json and the checkpoint in component_dir, converting weights to `dtype`
  // (float32 for the _keep_in_fp32_modules parameters) on `device`.
  static std::unique_ptr<WanTransformer3DModel> load(const std::string& component_dir, at::ScalarType dtype,
                                                     const at::Device& device = at::kCPU);

  const WanTransformerConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }

  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  Module& block(int i);
  const WanTransformerBlock& block(int i) const;
  // Parameters of the root unit (everything outside blocks.*), with their full checkpoint names.
  std::vector<ParamRef> root_parameters() const;
  // Parameters of block i, named "blocks.<i>.<...>".
  std::vector<ParamRef> block_parameters(int i) const;

  // hidden_states [B, C_in, F, H, W]; timestep [B] or [B, S] (S = F/pt * H/ph * W/pw; any numeric dtype);
  // encoder_hidden_states [B, L, text_dim]. Inputs are cast to the model dtype, the result
  // [B, C_out, F, H, W] is in the model dtype. `hooks` brackets the root and each block (UnitHooks).
  at::Tensor forward(const at::Tensor& hidden_states, const at::Tensor& timestep,
                     const at::Tensor& encoder_hidden_states, UnitHooks* hooks = nullptr,
                     AttentionBackend* backend = nullptr) const;

  // Stages of forward() (root parameters must be resident for prepare() and finish()).
  WanTransformerState prepare(const at::Tensor& hidden_states, const at::Tensor& timestep,
                              const at::Tensor& encoder_hidden_states) const;
  // x: [B, S', D] (S' = S or a slice), timestep_proj and rope matching those tokens.
  at::Tensor run_block(int i, const at::Tensor& x, const at::Tensor& context, const at::Tensor& timestep_proj,
                       const RotaryEmbedding& rope, AttentionBackend* backend = nullptr) const;
  // Output norm (modulated by temb), proj_out and unpatchify: x [B, S, D] -> [B, C_out, F, H, W].
  at::Tensor finish(const at::Tensor& x, const WanTransformerState& state) const;

 private:
  WanTransformerConfig config_;
  at::ScalarType dtype_;
  WanRotaryPosEmbed rope_;
  at::Tensor& scale_shift_table_;  // [1, 2, D] float32 (output modulation)
  at::Tensor& patch_weight_;       // [D, C_in, pt, ph, pw]
  at::Tensor& patch_bias_;         // [D]
  WanTimeTextEmbedding* condition_embedder_;
  std::vector<WanTransformerBlock*> blocks_;
  wan::Linear* proj_out_;
};

}  // namespace omni::models
