// WanTransformer3DModel's config.json (diffusers' register_to_config arguments), validated.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

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

  int64_t inner_dim() const { return num_attention_heads * attention_head_dim; }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
  // Transformer tokens of a latent video of frames x height x width (each divided by its patch size).
  int64_t token_count(int64_t frames, int64_t height, int64_t width) const {
    return frames / patch_size[0] * (height / patch_size[1]) * (width / patch_size[2]);
  }

  // Parses and validates `j`; `source` (the file path) prefixes every error. A missing or mistyped key, or a
  // feature Wan2.2 does not use (image_dim, added_kv_proj_dim, pos_embed_seq_len set; a qk_norm other than
  // rms_norm_across_heads) is an input error naming the key.
  static WanTransformerConfig from_json(const nlohmann::json& j, const std::string& source);
  // Reads <component_dir>/config.json.
  static WanTransformerConfig load(const std::string& component_dir);

  // Checks the invariants the model relies on (positive sizes, even head_dim, ...); `source` names the origin.
  void validate(const std::string& source) const;
};

}  // namespace omni::models
