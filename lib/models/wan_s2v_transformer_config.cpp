#include "models/wan_s2v_transformer_config.h"

#include "core/error.h"
#include "io/json_file.h"

namespace omni::models {

WanS2VTransformerConfig WanS2VTransformerConfig::from_json(const nlohmann::json& j, const std::string& source) {
  io::ConfigFile file(j, source, "Wan2.2's WanModel_S2V");
  if (const auto* cls = file.find("_class_name")) {
    OMNI_CHECK_INPUT(cls->is_string() && cls->get<std::string>() == "WanModel_S2V", source, ": key '_class_name' is ",
                     cls->dump(), ", expected \"WanModel_S2V\"");
  }
  const std::string model_type = file.string_or("model_type", "s2v");
  OMNI_CHECK_INPUT(model_type == "s2v", source, ": key 'model_type' is \"", model_type, "\", expected \"s2v\"");
  // The class's defaults (WanModel_S2V.__init__) where the file has no value.
  WanS2VTransformerConfig c;
  c.dim = file.positive_int_or("dim", 2048);
  c.ffn_dim = file.positive_int_or("ffn_dim", 8192);
  c.freq_dim = file.positive_int_or("freq_dim", 256);
  c.num_heads = file.positive_int_or("num_heads", 16);
  c.num_layers = file.positive_int_or("num_layers", 32);
  c.in_dim = file.positive_int_or("in_dim", 16);
  c.out_dim = file.positive_int_or("out_dim", 16);
  c.text_len = file.positive_int_or("text_len", 512);
  c.eps = file.number_or("eps", 1e-6);
  c.cond_dim = file.int_or("cond_dim", 0);
  c.audio_dim = file.positive_int_or("audio_dim", 5120);
  c.num_audio_token = file.positive_int_or("num_audio_token", 4);
  if (const auto* v = file.value("audio_inject_layers")) {
    OMNI_CHECK_INPUT(v->is_array() && !v->empty(), source,
                     ": key 'audio_inject_layers' must be a list of block indices, found ", v->dump());
    c.audio_inject_layers.clear();
    for (const auto& e : *v) {
      OMNI_CHECK_INPUT(e.is_number_integer(), source,
                       ": key 'audio_inject_layers' must be a list of block indices, found ", v->dump());
      c.audio_inject_layers.push_back(e.get<int64_t>());
    }
  }
  c.zero_timestep = file.bool_or("zero_timestep", false);
  c.add_last_motion = file.bool_or("add_last_motion", true);
  c.framepack_drop_mode = file.string_or("framepack_drop_mode", "drop");
  c.enable_adain = file.bool_or("enable_adain", false);
  c.adain_mode = file.string_or("adain_mode", "attn_norm");
  c.enable_motioner = file.bool_or("enable_motioner", true);
  c.enable_framepack = file.bool_or("enable_framepack", false);
  // zero_init only zeroes weights at construction (loading overwrites them); the others configure the motioner,
  // which validate() refuses.
  file.known({"zero_init", "enable_tsm", "trainable_token_pos_emb", "motion_token_num"});
  c.validate(source);
  file.warn_unknown();
  return c;
}

WanS2VTransformerConfig WanS2VTransformerConfig::load(const std::string& component_dir) {
  std::string path = component_dir;
  if (!path.empty() && path.back() != '/') path += '/';
  path += "config.json";
  return from_json(io::read_json(path), path);
}

void WanS2VTransformerConfig::validate(const std::string& source) const {
  OMNI_CHECK_INPUT(dim % num_heads == 0 && (dim / num_heads) % 2 == 0, source, ": key 'dim' (", dim,
                   ") must be a multiple of 'num_heads' (", num_heads, ") with an even quotient (RoPE's pairs)");
  // The audio encoder splits dim into quarters (its first convolutions) and halves.
  OMNI_CHECK_INPUT(dim % 4 == 0, source, ": key 'dim' must be a multiple of 4, got ", dim);
  OMNI_CHECK_INPUT(freq_dim % 2 == 0, source, ": key 'freq_dim' must be even, got ", freq_dim);
  OMNI_CHECK_INPUT(eps > 0, source, ": key 'eps' must be positive, got ", eps);
  // Wan's forward adds cond_encoder's output unconditionally: a model without one cannot run.
  OMNI_CHECK_INPUT(cond_dim > 0, source,
                   ": key 'cond_dim' must be positive (WanModel_S2V.forward always encodes the "
                   "pose latents), got ",
                   cond_dim);
  OMNI_CHECK_INPUT(!enable_motioner && enable_framepack, source,
                   ": only the frame-packed motion tokens are implemented ('enable_framepack' true, 'enable_motioner' "
                   "false, as Wan2.2-S2V-14B has them); got enable_framepack ",
                   enable_framepack, ", enable_motioner ", enable_motioner);
  OMNI_CHECK_INPUT(enable_adain && adain_mode == "attn_norm", source,
                   ": only the audio injection with AdaLN before the attention is implemented ('enable_adain' true, "
                   "'adain_mode' \"attn_norm\", as Wan2.2-S2V-14B has them)");
  OMNI_CHECK_INPUT(framepack_drop_mode == "padd" || (framepack_drop_mode == "drop" && add_last_motion), source,
                   ": key 'framepack_drop_mode' must be \"padd\", or \"drop\" with 'add_last_motion' true (which "
                   "drops nothing); got \"",
                   framepack_drop_mode, "\"");
  // Wan maps block i to its injector by finding "transformer_blocks.<id>" in the block's module name, so an id
  // that is a decimal prefix of another block's index (1 and block 10) also claims that block, and the
  // checkpoint's injectors no longer follow the list. Lists that ascend without such collisions map in order.
  for (size_t k = 0; k < audio_inject_layers.size(); ++k) {
    const int64_t id = audio_inject_layers[k];
    OMNI_CHECK_INPUT(id >= 0 && id < num_layers && (k == 0 || id > audio_inject_layers[k - 1]), source,
                     ": key 'audio_inject_layers' must ascend inside [0, ", num_layers, "), found ", id, " at ", k);
    const std::string prefix = std::to_string(id);
    for (int64_t block = 0; block < num_layers; ++block) {
      const std::string name = std::to_string(block);
      OMNI_CHECK_INPUT(block == id || name.compare(0, prefix.size(), prefix) != 0, source,
                       ": key 'audio_inject_layers' lists block ", id, ", whose number begins block ", block,
                       "'s: Wan2.2 would inject into both (its name match), which this port does not reproduce");
    }
  }
}

}  // namespace omni::models
