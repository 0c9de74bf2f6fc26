#include "models/wan_transformer_config.h"

#include "core/error.h"
#include "io/json_file.h"

namespace omni::models {

namespace {

// Keys that switch on the Wan2.1 CLIP image branch; no Wan2.2 checkpoint sets them and we do not implement it.
void reject_set(const nlohmann::json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  OMNI_CHECK_INPUT(it == j.end() || it->is_null(), source, ": key '", key, "' is ", it->dump(),
                   "; only null is supported (the Wan2.1 CLIP image branch is not implemented; Wan2.2 "
                   "checkpoints leave it null)");
}

}  // namespace

WanTransformerConfig WanTransformerConfig::from_json(const nlohmann::json& j, const std::string& source) {
  OMNI_CHECK_INPUT(j.is_object(), source, ": expected a JSON object");
  if (j.contains("_class_name")) {
    const auto& cls = j["_class_name"];
    OMNI_CHECK_INPUT(cls.is_string() && cls.get<std::string>() == "WanTransformer3DModel", source,
                     ": key '_class_name' is ", cls.dump(), ", expected \"WanTransformer3DModel\"");
  }
  WanTransformerConfig c;
  if (j.contains("patch_size")) {
    const auto& p = j["patch_size"];
    OMNI_CHECK_INPUT(p.is_array() && p.size() == 3, source, ": key 'patch_size' must be a list of 3 integers, found ",
                     p.dump());
    for (size_t i = 0; i < 3; ++i) {
      OMNI_CHECK_INPUT(p[i].is_number_integer(), source, ": key 'patch_size' must be a list of 3 integers, found ",
                       p.dump());
      c.patch_size[i] = p[i].get<int64_t>();
    }
  }
  c.num_attention_heads = io::json_int(j, "num_attention_heads", source);
  c.attention_head_dim = io::json_int(j, "attention_head_dim", source);
  c.in_channels = io::json_int(j, "in_channels", source);
  // diffusers: out_channels = out_channels or in_channels.
  if (j.contains("out_channels") && !j["out_channels"].is_null()) {
    c.out_channels = io::json_int(j, "out_channels", source);
  } else {
    c.out_channels = c.in_channels;
  }
  c.text_dim = io::json_int(j, "text_dim", source);
  c.freq_dim = io::json_int_or(j, "freq_dim", 256, source);
  c.ffn_dim = io::json_int(j, "ffn_dim", source);
  c.num_layers = io::json_int(j, "num_layers", source);
  c.cross_attn_norm = io::json_bool_or(j, "cross_attn_norm", true, source);
  c.eps = io::json_number_or(j, "eps", 1e-6, source);
  c.rope_max_seq_len = io::json_int_or(j, "rope_max_seq_len", 1024, source);
  if (j.contains("qk_norm")) {
    const auto& q = j["qk_norm"];
    OMNI_CHECK_INPUT(q.is_string() && q.get<std::string>() == "rms_norm_across_heads", source, ": key 'qk_norm' is ",
                     q.dump(), "; only \"rms_norm_across_heads\" is supported");
  }
  reject_set(j, "image_dim", source);
  reject_set(j, "added_kv_proj_dim", source);
  reject_set(j, "pos_embed_seq_len", source);
  c.validate(source);
  return c;
}

WanTransformerConfig WanTransformerConfig::load(const std::string& component_dir) {
  std::string path = component_dir;
  if (!path.empty() && path.back() != '/') path += '/';
  path += "config.json";
  return from_json(io::read_json(path), path);
}

void WanTransformerConfig::validate(const std::string& source) const {
  for (size_t i = 0; i < 3; ++i)
    OMNI_CHECK_INPUT(patch_size[i] > 0, source, ": key 'patch_size' entries must be positive, got ", patch_size[i]);
  const std::pair<const char*, int64_t> positive[] = {{"num_attention_heads", num_attention_heads},
                                                      {"attention_head_dim", attention_head_dim},
                                                      {"in_channels", in_channels},
                                                      {"out_channels", out_channels},
                                                      {"text_dim", text_dim},
                                                      {"freq_dim", freq_dim},
                                                      {"ffn_dim", ffn_dim},
                                                      {"num_layers", num_layers},
                                                      {"rope_max_seq_len", rope_max_seq_len}};
  for (const auto& [key, value] : positive)
    OMNI_CHECK_INPUT(value > 0, source, ": key '", key, "' must be positive, got ", value);
  // RoPE rotates pairs of channels, and the sinusoid is [cos | sin] halves.
  OMNI_CHECK_INPUT(attention_head_dim % 2 == 0, source, ": key 'attention_head_dim' must be even, got ",
                   attention_head_dim);
  OMNI_CHECK_INPUT(freq_dim % 2 == 0, source, ": key 'freq_dim' must be even, got ", freq_dim);
  OMNI_CHECK_INPUT(eps > 0, source, ": key 'eps' must be positive, got ", eps);
}

}  // namespace omni::models
