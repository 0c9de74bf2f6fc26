// Wan2.2-S2V-14B's transformer, WanModel_S2V (wan/modules/s2v/model_s2v.py; docs/s2v-reference.md section 4), under
// the checkpoint's original Wan names (diffusers has no S2V model). One call denoises one clip:
//
//   tokens    the noisy latents patch-embedded plus the pose latents through cond_encoder (T x h/2 x w/2 video
//             tokens, rotary positions (f, y, x)); then the reference latent's h/2 x w/2 tokens at rotary frame 30;
//             then, unless dropped (the first clip), the frame packer's motion tokens at negative frames
//             (wan_s2v_frame_packer.h); each group plus its row of trainable_cond_mask (0 video, 1 reference,
//             2 motion)
//   timestep  the sinusoid (float64, as Wan) of [t, 0] through time_embedding and time_projection: the video
//             tokens are modulated with t, the reference and motion tokens with 0 (zero_timestep; two token runs
//             of the blocks' per-run modulation)
//   text      the context zero-padded to text_len rows through text_embedding
//   blocks    Wan's attention blocks (WanTransformerBlock under Wan's names) over all tokens; after each block of
//             audio_inject_layers, its audio injector adds each latent frame's audio cross-attention to that
//             frame's video tokens (wan_s2v_audio_injector.h), from the audio encoder's tokens
//             (wan_s2v_audio_encoder.h: the clip's audio slots after motion_frames copies of its first one, the
//             first (motion_frames + 3) / 4 audio frames dropped)
//   head      the video tokens alone: LayerNorm modulated by head.modulation + e(t), head.head, unpatchify
//
// HSDP units: the root (embeddings, cond_encoder, trainable_cond_mask, the audio encoder, the frame packer, head),
// then in forward order each block followed by its audio injector when it has one (Animate's face adapters' rule).
// One clip per call (batch 1, as Wan2.2's pipeline calls it; the two guidance branches are two calls). With
// sequence parallelism each rank runs the blocks on its share of all the tokens (forward's `split`).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/wan_rotary_pos_embed.h"
#include "models/wan_s2v_audio_encoder.h"
#include "models/wan_s2v_audio_injector.h"
#include "models/wan_s2v_frame_packer.h"
#include "models/wan_s2v_transformer_config.h"
#include "models/wan_transformer.h"
#include "models/wan_transformer_block.h"
#include "models/wan_transformer_layers.h"

namespace omni::models {

// One call's inputs (WanModel_S2V.forward's, batch 1).
struct WanS2VInputs {
  at::Tensor latents;               // [1, in_dim, T, h, w] the noisy latents (x)
  at::Tensor timestep;              // [1] (t)
  at::Tensor context;               // [1, L, text_dim], L <= text_len: the prompt's T5 states
  at::Tensor ref_latents;           // [1, in_dim, 1, h, w] the reference image's latent
  at::Tensor motion_latents;        // [1, in_dim, M, h, w] the previous frames' latents (unused when dropped)
  at::Tensor cond_states;           // [1, cond_dim, T, h, w] the pose latents (zeros without a pose video)
  at::Tensor audio;                 // [1, 25, audio_dim, 4T] this clip's audio slots (wav2vec2 hidden states)
  bool drop_motion_frames = false;  // no motion tokens (the first clip, when Wan drops its first motion)
  int64_t motion_frames = 73;       // pixel frames of motion: copies of the first audio slot put before the clip's
};

class WanS2VTransformer : public Module {
 public:
  explicit WanS2VTransformer(const WanS2VTransformerConfig& config, at::ScalarType dtype = at::kFloat);

  // Reads <dir>/config.json and the checkpoint in dir (Wan's names), weights converted to `dtype` (float32 where
  // Wan computes under autocast float32: the time embedding, the head, the modulations, the audio encoder).
  static std::unique_ptr<WanS2VTransformer> load(const std::string& dir, at::ScalarType dtype,
                                                 const at::Device& device = at::kCPU);

  const WanS2VTransformerConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  int num_blocks() const { return static_cast<int>(blocks_.size()); }
  const WanTransformerBlock& block(int i) const;
  // The audio injector after block i (null: none).
  const WanS2VAudioInjector* injector_after(int i) const;
  // Every HSDP unit but the root, in forward order: each block, then its audio injector if it has one.
  std::vector<const Module*> units() const;
  // The HSDP unit index of block i, and of the injector after it (-1: none).
  int block_unit(int i) const;
  int injector_unit(int i) const;

  // The velocity prediction [1, out_dim, T, h, w] in the model dtype. hooks: HSDP's (null: none). With
  // debug::dumps_enabled() the intermediates are dumped under the recorder's names
  // (tools/reference/s2v/record_s2v.py: audio.*, embed.*, rope.*, block.<i>.out / .after_audio, inject.<i>.*,
  // head.out). split: sequence parallelism (null: none): the blocks run on this rank's share of the tokens
  // (video, reference, motion), the audio injection on the share's video tokens frame by frame, the head's output
  // gathered.
  at::Tensor forward(const WanS2VInputs& in, UnitHooks* hooks = nullptr, TokenSplit* split = nullptr) const;

 private:
  // [2, 6, D] and [2, D] float32: time_projection and time_embedding of the sinusoid of [t, 0].
  std::pair<at::Tensor, at::Tensor> embed_timestep(const at::Tensor& timestep, const at::Device& device) const;

  WanS2VTransformerConfig config_;
  at::ScalarType dtype_;
  WanRotaryPosEmbed rope_;
  at::Tensor& patch_weight_;  // [D, in_dim, 1, 2, 2]
  at::Tensor& patch_bias_;
  at::Tensor& cond_weight_;  // [D, cond_dim, 1, 2, 2]
  at::Tensor& cond_bias_;
  wan::Linear* text_linear_1_;
  wan::Linear* text_linear_2_;
  wan::Linear* time_linear_1_;
  wan::Linear* time_linear_2_;
  wan::Linear* time_projection_;
  std::vector<WanTransformerBlock*> blocks_;
  at::Tensor& head_modulation_;  // [1, 2, D] float32
  wan::Linear* head_;
  at::Tensor& cond_mask_;  // [3, D] trainable_cond_mask: video, reference, motion
  WanS2VAudioEncoder* audio_encoder_;
  std::vector<WanS2VAudioInjector*> injectors_;  // k: after block audio_inject_layers[k]
  std::vector<int> injector_of_block_;           // block i -> k, or -1
  WanS2VFramePacker* frame_packer_;
};

// The HSDP units of the S2V transformer in forward order, its audio injectors included: hsdp_sharding.h's generic
// blocks_of would take the blocks alone and put the injectors in the root, while forward() hooks them as units of
// their own (injector_unit).
inline std::vector<const Module*> blocks_of(const WanS2VTransformer& m) {
  return m.units();
}

}  // namespace omni::models
