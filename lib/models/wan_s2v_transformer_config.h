// WanModel_S2V's config.json (Wan2.2-S2V-14B's transformer, wan/modules/s2v/model_s2v.py: the register_to_config
// arguments as save_pretrained writes them), validated. patch_size, cross_attn_norm, qk_norm, text_dim and
// window_size are in the class's ignore_for_config: never read from the file, always (1, 2, 2), true, true, 4096 and
// (-1, -1).
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omni::models {

struct WanS2VTransformerConfig {
  std::array<int64_t, 3> patch_size{1, 2, 2};  // (t, h, w); fixed
  int64_t dim = 5120;
  int64_t ffn_dim = 13824;
  int64_t freq_dim = 256;
  int64_t num_heads = 40;
  int64_t num_layers = 40;
  int64_t in_dim = 16;
  int64_t out_dim = 16;
  int64_t text_dim = 4096;  // fixed (ignore_for_config)
  int64_t text_len = 512;   // the context is zero-padded to this many rows
  double eps = 1e-6;
  int64_t cond_dim = 16;        // pose latents' channels (cond_encoder)
  int64_t audio_dim = 1024;     // wav2vec2's hidden width
  int64_t num_audio_token = 4;  // audio tokens per latent frame (a padding token is appended)
  // The blocks after which the audio cross-attention runs, ascending; injector k follows block
  // audio_inject_layers[k].
  std::vector<int64_t> audio_inject_layers{0, 4, 8, 12, 16, 20, 24, 27};
  bool zero_timestep = false;   // reference and motion tokens modulated with timestep 0
  bool add_last_motion = true;  // false: the frame packer's newest 3 motion frames are zeroed ("padd")
  std::string framepack_drop_mode = "drop";
  // What the class also takes and this port does not implement (refused by validate): the motioner
  // transformer (enable_motioner), motion tokens without frame packing, the audio injection without AdaLN.
  bool enable_adain = false;
  std::string adain_mode = "attn_norm";
  bool enable_motioner = true;
  bool enable_framepack = false;

  int64_t head_dim() const { return dim / num_heads; }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }

  // Parses and validates `j`; `source` (the file path) prefixes every error. A missing or mistyped key or a
  // combination this port does not run is an input error naming the key.
  static WanS2VTransformerConfig from_json(const nlohmann::json& j, const std::string& source);
  // Reads <component_dir>/config.json.
  static WanS2VTransformerConfig load(const std::string& component_dir);
  void validate(const std::string& source) const;
};

}  // namespace omni::models
