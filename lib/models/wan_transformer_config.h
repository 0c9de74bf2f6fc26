// WanTransformer3DModel's config.json (diffusers' register_to_config arguments), validated.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omni::models {

struct WanTransformerConfig {
  std::array<int64_t, 3> patch_size{1, 2, 2};  // (t, h, w)
  int64_t num_attention_heads = 40;
  int64_t attention_head_dim = 128;
  int64_t in_channels = 16;
  int64_t out_channels = 16;
  int64_t text_dim = 4096;
  int64_t freq_dim = 256;
  int64_t ffn_dim = 13824;
  int64_t num_layers = 40;
  bool cross_attn_norm = true;
  double eps = 1e-6;
  int64_t rope_max_seq_len = 1024;
  // Wan2.1's CLIP image branch (0: none, every Wan2.2 model): the CLIP hidden width the image embedder takes,
  // the width of the added key/value projections of every block's cross-attention (the transformer's own width
  // in every published model), and the image position table's length (FLF2V-14B: 514, two images of 257).
  int64_t image_dim = 0;
  int64_t added_kv_proj_dim = 0;
  int64_t pos_embed_seq_len = 0;

  // VACE (WanVACETransformer3DModel: Wan2.1-VACE, Wan2.2-VACE-Fun): the main blocks after which a VACE block's
  // hint is added (ascending; 0 among them), and the channels of the VACE context the vace_patch_embedding takes
  // (96 in the published models: the control video's inactive and reactive latents and the mask). Empty: no VACE.
  std::vector<int64_t> vace_layers;
  int64_t vace_in_channels = 0;

  // Wan2.2-Animate (WanAnimateTransformer3DModel): the pose latents' channels (pose_patch_embedding; 0: not an
  // Animate model), the motion encoder's crop size, widths and per-size channels (empty: diffusers' table), the
  // face encoder's width and heads, the main blocks between face adapters, and the face frames the motion
  // encoder takes at a time.
  int64_t latent_channels = 0;
  std::map<std::string, int64_t> motion_encoder_channel_sizes;
  int64_t motion_encoder_size = 512;
  int64_t motion_style_dim = 512;
  int64_t motion_dim = 20;
  int64_t motion_encoder_dim = 512;
  int64_t face_encoder_hidden_dim = 1024;
  int64_t face_encoder_num_heads = 4;
  int64_t inject_face_latents_blocks = 5;
  int64_t motion_encoder_batch_size = 8;

  bool has_image_branch() const { return image_dim > 0; }
  bool is_animate() const { return latent_channels > 0; }
  // Animate: the face adapters, one after every inject_face_latents_blocks-th block from block 0.
  int64_t num_face_adapters() const { return is_animate() ? num_layers / inject_face_latents_blocks : 0; }
  bool is_vace() const { return !vace_layers.empty(); }

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
  // Transformer tokens of a latent video of frames x height x width (each divided by its patch size).
  int64_t token_count(int64_t frames, int64_t height, int64_t width) const {
    return frames / patch_size[0] * (height / patch_size[1]) * (width / patch_size[2]);
  }

  // Parses and validates `j`; `source` (the file path) prefixes every error. A missing or mistyped key, a
  // qk_norm other than rms_norm_across_heads, or an image branch that does not fit together (image_dim without
  // added_kv_proj_dim or the reverse, added_kv_proj_dim other than the inner width, pos_embed_seq_len without
  // image_dim or odd) is an input error naming the key.
  static WanTransformerConfig from_json(const nlohmann::json& j, const std::string& source);
  // Reads <component_dir>/config.json.
  static WanTransformerConfig load(const std::string& component_dir);

  // Checks the invariants the model relies on (positive sizes, even head_dim, ...); `source` names the origin.
  void validate(const std::string& source) const;
};

}  // namespace omni::models
