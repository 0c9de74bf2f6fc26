// WanTransformer3DModel (diffusers), as the Wan checkpoints use it: Wan2.2's T2V-A14B / I2V-A14B experts (scalar
// timesteps) and TI2V-5B (per-token timesteps, expand_timesteps); Wan2.1's models, whose image-to-video and
// first-last-frame transformers add the CLIP image branch (image_embedder, and image key/values in every
// cross-attention).
//
// HSDP units: the root (patch_embedding, condition_embedder, proj_out, scale_shift_table; VACE's
// vace_patch_embedding) and, in forward order, a VACE model's vace_blocks.0..K-1 then blocks.0..N-1 (unit k is
// VACE block k, unit K + i block i; blocks_of() lists them so).
// Animate (WanAnimateTransformer3DModel, config.is_animate()): Wan2.1's image model with the pose video's latents
// patch-embedded (pose_patch_embedding) and added to every latent frame's tokens but the first (the reference's),
// and the face video's crops through the motion encoder and face encoder (root unit) into per-frame face tokens,
// which face_adapter.k (a unit of its own, after block k * inject_face_latents_blocks in forward order) adds to
// the tokens after that block.
// VACE (WanVACETransformer3DModel, config.is_vace()): the VACE context is patch-embedded, zero-padded to the
// video's tokens and split like them; the VACE blocks run first, each giving a hint, and the hint of VACE block k
// times its scale is added to the output of block vace_layers[k].
// forward() is the model's one path: prepare (patch embedding, condition embedding, rope), the blocks, finish
// (output norm, proj_out, unpatchify). What the layers above add plugs into it through ForwardHooks: HSDP's
// unit hooks, an attention backend, a token split (sequence parallelism) and a block runner (the step cache).
// WanBlockRun::run is the only loop over blocks.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/wan_animate_face_adapter.h"
#include "models/wan_animate_face_encoder.h"
#include "models/wan_animate_motion_encoder.h"
#include "models/wan_attention.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_time_text_embedding.h"
#include "models/wan_transformer_block.h"
#include "models/wan_transformer_config.h"
#include "models/wan_transformer_layers.h"
#include "models/wan_vace_block.h"

namespace omni::models {

class WanTransformer3DModel;

// What the blocks consume, produced by forward()'s first stage.
struct WanTransformerState {
  at::Tensor tokens;              // [B, S, D] patch-embedded video, activation dtype
  ConditionEmbedding cond;        // temb, timestep_proj ([B, 6, D] or per run [B, R, 6, D]), context, runs
  TokenRuns runs;                 // cond.runs over `tokens`: this rank's after a split (cond.runs stays whole)
  int64_t first_run = 0;          // after a split: the index in cond.runs of runs' first run (cond.temb's row)
  RotaryEmbedding rope;           // [S, d/2] tables
  at::Tensor control;             // VACE: [B, S, D] the patch-embedded context padded to S (split like tokens)
  at::Tensor face;                // Animate: [B, F', N, D] each latent frame's face tokens (whole on every rank)
  int64_t first_token = 0;        // after a split: the index in the video of tokens' first token
  std::array<int64_t, 3> grid{};  // post-patch (frames, height, width); S = product
  int64_t batch = 0;
};

// Splits one call's tokens over ranks around the blocks (sequence parallelism: pipeline/sequence_parallel.h).
class TokenSplit {
 public:
  virtual ~TokenSplit() = default;
  // Before anything runs (no unit gathered yet): usage errors for a call of `seq` tokens on `config`.
  virtual void check(const WanTransformerConfig& config, int64_t seq) = 0;
  // This rank's share of the blocks' inputs: the tokens, the runs of per-token timesteps with their
  // modulation rows, and the rope rows narrowed to its token range, in place. Returns the attention backend the blocks
  // use (null: local attention).
  virtual AttentionBackend* split(WanTransformerState& state) = 0;
  // This rank's tokens [B, S', D] -> every rank's [B, S, D], in sequence order (a collective of the split's
  // ranks).
  virtual at::Tensor gather(const at::Tensor& x) = 0;
};

// The blocks of one forward call, bound to that call's inputs. run() is the model's only loop over blocks:
// the unit hooks around each block, the block, its "blocks.N" dump (of all tokens, gathered when split).
class WanBlockRun {
 public:
  // context_image: the projected CLIP image tokens [B, N, D] on a transformer with the image branch, else
  // undefined.
  // hints: VACE's, one [B, S', D] per VACE block (empty: none), added times hint_scale[k] after block
  // vace_layers[k].
  WanBlockRun(const WanTransformer3DModel& model, const at::Tensor& context, const at::Tensor& context_image,
              const at::Tensor& timestep_proj, const TokenRuns& runs, const RotaryEmbedding& rope,
              AttentionBackend* backend, UnitHooks* hooks, TokenSplit* split, const std::vector<at::Tensor>& hints = {},
              const std::vector<double>& hint_scale = {}, const at::Tensor& face = at::Tensor(),
              int64_t first_token = 0, int64_t frame_tokens = 0);
  int num_blocks() const;
  // This call's block modulation input e0: [B, 6, D], or [B, R, 6, D] per run of runs() (this rank's tokens).
  const at::Tensor& timestep_proj() const { return timestep_proj_; }
  const TokenRuns& runs() const { return runs_; }
  // Blocks [first, end) on x [B, S', D].
  at::Tensor run(int first, int end, at::Tensor x) const;
  // Blocks [first, N) will not run this call. keep_gathers: they still pass through the unit hooks (their
  // HSDP gathers are shared with ranks that do run them); else only the prefetch of `first` is drained.
  void pass_over(int first, bool keep_gathers) const;

 private:
  const WanTransformer3DModel& model_;
  const at::Tensor& context_;
  const at::Tensor& context_image_;
  const at::Tensor& timestep_proj_;
  const TokenRuns& runs_;
  const RotaryEmbedding& rope_;
  AttentionBackend* backend_;
  UnitHooks* hooks_;
  TokenSplit* split_;
  const std::vector<at::Tensor>& hints_;
  const std::vector<double>& hint_scale_;
  std::vector<int> hint_of_block_;  // block i -> its VACE hint's index, or -1
  // Animate: each latent frame's face tokens [B, F', N, D]; this rank's first token; tokens per latent frame.
  const at::Tensor& face_;
  int64_t first_token_;
  int64_t frame_tokens_;
};

// Runs one call's blocks over x [B, S', D]; without one, forward() runs them all. The step cache is one
// (pipeline/step_cache.h): it decides which blocks run and replays the skipped ones' residual.
class BlockRunner {
 public:
  virtual ~BlockRunner() = default;
  virtual at::Tensor run(const WanBlockRun& blocks, const at::Tensor& x) = 0;
};

// What forward() plugs in; every member may be null. Converts from a UnitHooks* for the plain HSDP call.
struct ForwardHooks {
  ForwardHooks(UnitHooks* units = nullptr, AttentionBackend* attention = nullptr)  // NOLINT: implicit on purpose
      : units(units), attention(attention) {}
  UnitHooks* units;             // brackets the root unit and each block
  AttentionBackend* attention;  // the blocks' attention when the tokens are not split
  TokenSplit* tokens = nullptr;
  BlockRunner* blocks = nullptr;
};

// Animate's per-call inputs (WanAnimateTransformer3DModel.forward's pose_hidden_states and face_pixel_values).
struct AnimateInputs {
  at::Tensor pose;           // [B, latent_channels, F - 1, H, W]: the pose video's latents
  at::Tensor face_pixels;    // [B, 3, T, size, size]: the face crops, in [-1, 1]
  int64_t motion_batch = 0;  // face frames through the motion encoder at a time (0: the config's)
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
  int num_vace_blocks() const { return static_cast<int>(vace_blocks_.size()); }
  const WanVaceBlock& vace_block(int k) const;
  int num_face_adapters() const { return static_cast<int>(face_adapters_.size()); }
  // Animate's encoders (null on other models).
  const WanAnimateMotionEncoder* motion_encoder() const { return motion_encoder_; }
  const WanAnimateFaceEncoder* face_encoder() const { return face_encoder_; }
  // Every HSDP unit but the root, in forward order: the VACE blocks, then the blocks, each Animate face adapter
  // after its block.
  std::vector<const Module*> units() const;
  // The HSDP unit index of block i, and of the face adapter that runs after it (-1: none).
  int block_unit(int i) const;
  int face_adapter_unit(int i) const;
  // The face adapter after block i (Animate; null: none).
  const WanAnimateFaceAdapter* face_adapter_after(int i) const;
  Module& block(int i);
  const WanTransformerBlock& block(int i) const;
  // Parameters of the root unit (everything outside blocks.*, vace_blocks.* and face_adapter.*), with their full
  // checkpoint names.
  std::vector<ParamRef> root_parameters() const;
  // Parameters of block i, named "blocks.<i>.<...>".
  std::vector<ParamRef> block_parameters(int i) const;

  // hidden_states [B, C_in, F, H, W]; timestep [B] or [B, S] (S = F/pt * H/ph * W/pw; any numeric dtype);
  // encoder_hidden_states [B, L, text_dim]; encoder_hidden_states_image: the CLIP image encoder's states
  // [I, N, image_dim] of the video's I images (one; or first and last, with the image position table), required
  // by a transformer with the image branch and refused by one without; they condition every batch row. Unlike
  // diffusers, which finds the image tokens as the first L - 512 of one concatenated context (wrong for any
  // other text length), the two stay apart. Inputs are cast to the model dtype, the result [B, C_out, F, H, W]
  // is in the model dtype, on every rank of a token split.
  // VACE: control_hidden_states [B, vace_in_channels, F', H, W] (F' <= F: diffusers pads its tokens with zeros)
  // and control_scale, one per VACE block (empty: all 1), required by a VACE model and refused by others.
  at::Tensor forward(const at::Tensor& hidden_states, const at::Tensor& timestep,
                     const at::Tensor& encoder_hidden_states, const ForwardHooks& hooks = {},
                     const at::Tensor& encoder_hidden_states_image = at::Tensor(),
                     const at::Tensor& control_hidden_states = at::Tensor(),
                     const std::vector<double>& control_scale = {}, const AnimateInputs& animate = {}) const;

 private:
  // forward()'s stages (the root parameters must be resident).
  WanTransformerState prepare(const at::Tensor& hidden_states, const at::Tensor& timestep,
                              const at::Tensor& encoder_hidden_states,
                              const at::Tensor& encoder_hidden_states_image) const;
  // Animate: the pose latents patch-embedded and added to the tokens of every latent frame but the first, in
  // place; and the face crops through the motion and face encoders: [B, F', N, D] with F' = F (a zero frame
  // first, the reference's).
  void add_pose(const at::Tensor& pose, WanTransformerState& state) const;
  at::Tensor encode_face(const at::Tensor& face_pixels, int64_t motion_batch, const WanTransformerState& state) const;
  // VACE: the context [B, vace_in_channels, F', H, W] patch-embedded and zero-padded to the video's S tokens.
  at::Tensor embed_control(const at::Tensor& control, const WanTransformerState& state) const;
  // Output norm (modulated by temb) and proj_out on the tokens x holds (this rank's after a split: the state's
  // runs, temb's rows from first_run): x [B, S', D] -> [B, S', pt*ph*pw*C_out]. Per token, so running it before
  // the sequence-parallel gather gives the gathered result, and the gather moves pt*ph*pw*C_out values a token
  // instead of D (64 instead of 5,120 for A14B) with the head's float32 temporaries on S' tokens, not S.
  at::Tensor head(const at::Tensor& x, const WanTransformerState& state) const;
  // The head's tokens [B, S, pt*ph*pw*C_out] in sequence order -> the video [B, C_out, F, H, W].
  at::Tensor unpatchify(const at::Tensor& h, const WanTransformerState& state) const;

  WanTransformerConfig config_;
  at::ScalarType dtype_;
  WanRotaryPosEmbed rope_;
  at::Tensor& scale_shift_table_;  // [1, 2, D] float32 (output modulation)
  at::Tensor& patch_weight_;       // [D, C_in, pt, ph, pw]
  at::Tensor& patch_bias_;         // [D]
  WanTimeTextEmbedding* condition_embedder_;
  std::vector<WanTransformerBlock*> blocks_;
  at::Tensor* vace_patch_weight_ = nullptr;  // [D, vace_in_channels, pt, ph, pw]
  at::Tensor* vace_patch_bias_ = nullptr;    // [D]
  std::vector<WanVaceBlock*> vace_blocks_;
  at::Tensor* pose_patch_weight_ = nullptr;  // [D, latent_channels, pt, ph, pw]
  at::Tensor* pose_patch_bias_ = nullptr;    // [D]
  WanAnimateMotionEncoder* motion_encoder_ = nullptr;
  WanAnimateFaceEncoder* face_encoder_ = nullptr;
  std::vector<WanAnimateFaceAdapter*> face_adapters_;
  wan::Linear* proj_out_;
};

// The HSDP units of a transformer in forward order (hsdp_sharding.h's blocks_of, with VACE's blocks first).
inline std::vector<const Module*> blocks_of(const WanTransformer3DModel& m) {
  return m.units();
}

}  // namespace omni::models
