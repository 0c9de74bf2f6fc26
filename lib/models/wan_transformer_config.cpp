#include "models/wan_transformer_config.h"

#include "core/error.h"
#include "io/json_file.h"

namespace omni::models {

namespace {

// A key of the Wan2.1 CLIP image branch: null or absent (0), else a positive integer.
int64_t optional_size(io::ConfigFile& file, const char* key) {
  const nlohmann::json* v = file.find(key);
  if (v == nullptr) return 0;
  OMNI_CHECK_INPUT(v->is_number_integer() && v->get<int64_t>() > 0, file.source(), ": key '", key, "' is ", v->dump(),
                   ", expected null or a positive integer");
  return v->get<int64_t>();
}

}  // namespace

WanTransformerConfig WanTransformerConfig::from_json(const nlohmann::json& j, const std::string& source) {
  io::ConfigFile file(j, source, "WanTransformer3DModel");
  bool vace = false, animate = false;
  if (const auto* cls = file.find("_class_name")) {
    const std::string name = cls->is_string() ? cls->get<std::string>() : "";
    vace = name == "WanVACETransformer3DModel";
    animate = name == "WanAnimateTransformer3DModel";
    OMNI_CHECK_INPUT(vace || animate || name == "WanTransformer3DModel", source, ": key '_class_name' is ", cls->dump(),
                     ", expected \"WanTransformer3DModel\", \"WanVACETransformer3DModel\" or "
                     "\"WanAnimateTransformer3DModel\"");
  }
  WanTransformerConfig c;
  if (vace) {
    // diffusers' defaults: the 14B model's layers and 96 channels.
    c.vace_layers = {0, 5, 10, 15, 20, 25, 30, 35};
    if (const auto* v = file.value("vace_layers")) {
      OMNI_CHECK_INPUT(v->is_array() && !v->empty(), source,
                       ": key 'vace_layers' must be a list of block indices, found ", v->dump());
      c.vace_layers.clear();
      for (const auto& e : *v) {
        OMNI_CHECK_INPUT(e.is_number_integer(), source, ": key 'vace_layers' must be a list of block indices, found ",
                         v->dump());
        c.vace_layers.push_back(e.get<int64_t>());
      }
    }
    c.vace_in_channels = file.int_or("vace_in_channels", 96);
  }
  if (const auto* p = file.value("patch_size")) {
    OMNI_CHECK_INPUT(p->is_array() && p->size() == 3, source, ": key 'patch_size' must be a list of 3 integers, found ",
                     p->dump());
    for (size_t i = 0; i < 3; ++i) {
      OMNI_CHECK_INPUT((*p)[i].is_number_integer(), source, ": key 'patch_size' must be a list of 3 integers, found ",
                       p->dump());
      c.patch_size[i] = (*p)[i].get<int64_t>();
    }
  }
  c.num_attention_heads = file.get_int("num_attention_heads");
  c.attention_head_dim = file.get_int("attention_head_dim");
  if (animate) {
    // diffusers: either of in_channels and latent_channels gives the other (in = 2 latent + 4: the noisy
    // latents, the reference and conditioning latents and the 4-channel mask); out_channels defaults to latent.
    const auto* in = file.find("in_channels");
    const auto* latent = file.find("latent_channels");
    OMNI_CHECK_INPUT(in != nullptr || latent != nullptr, source,
                     ": an Animate transformer needs 'in_channels' or 'latent_channels'");
    c.in_channels = in ? file.positive_int("in_channels") : 2 * file.positive_int("latent_channels") + 4;
    c.latent_channels = latent ? file.positive_int("latent_channels") : (c.in_channels - 4) / 2;  // validate() checks
    c.out_channels = file.find("out_channels") ? file.positive_int("out_channels") : c.latent_channels;
    if (const auto* sizes = file.find("motion_encoder_channel_sizes")) {
      OMNI_CHECK_INPUT(sizes->is_object(), source,
                       ": key 'motion_encoder_channel_sizes' must map sizes to widths, found ", sizes->dump());
      for (const auto& [size, width] : sizes->items()) {
        OMNI_CHECK_INPUT(width.is_number_integer() && width.get<int64_t>() > 0, source,
                         ": key 'motion_encoder_channel_sizes' must map sizes to positive widths, found ",
                         sizes->dump());
        c.motion_encoder_channel_sizes[size] = width.get<int64_t>();
      }
    }
    c.motion_encoder_size = file.positive_int_or("motion_encoder_size", 512);
    c.motion_style_dim = file.positive_int_or("motion_style_dim", 512);
    c.motion_dim = file.positive_int_or("motion_dim", 20);
    c.motion_encoder_dim = file.positive_int_or("motion_encoder_dim", 512);
    c.face_encoder_hidden_dim = file.positive_int_or("face_encoder_hidden_dim", 1024);
    c.face_encoder_num_heads = file.positive_int_or("face_encoder_num_heads", 4);
    c.inject_face_latents_blocks = file.positive_int_or("inject_face_latents_blocks", 5);
    c.motion_encoder_batch_size = file.positive_int_or("motion_encoder_batch_size", 8);
  } else {
    c.in_channels = file.get_int("in_channels");
    // diffusers: out_channels = out_channels or in_channels.
    c.out_channels = file.int_or("out_channels", c.in_channels);
  }
  c.text_dim = file.get_int("text_dim");
  c.freq_dim = file.int_or("freq_dim", 256);
  c.ffn_dim = file.get_int("ffn_dim");
  c.num_layers = file.get_int("num_layers");
  c.cross_attn_norm = file.bool_or("cross_attn_norm", true);
  c.eps = file.number_or("eps", 1e-6);
  c.rope_max_seq_len = file.int_or("rope_max_seq_len", 1024);
  if (const auto* q = file.value("qk_norm")) {
    OMNI_CHECK_INPUT(q->is_string() && q->get<std::string>() == "rms_norm_across_heads", source, ": key 'qk_norm' is ",
                     q->dump(), "; only \"rms_norm_across_heads\" is supported");
  }
  c.image_dim = optional_size(file, "image_dim");
  c.added_kv_proj_dim = optional_size(file, "added_kv_proj_dim");
  c.pos_embed_seq_len = optional_size(file, "pos_embed_seq_len");
  c.validate(source);
  file.warn_unknown();
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
  // The image branch: the embedder projects the CLIP states to the inner width, which the added key/value
  // projections then take (diffusers builds them from added_kv_proj_dim; any other value cannot run).
  OMNI_CHECK_INPUT((image_dim > 0) == (added_kv_proj_dim > 0), source,
                   ": keys 'image_dim' and 'added_kv_proj_dim' must be set together (Wan2.1 image models) or both "
                   "null; got ",
                   image_dim, " and ", added_kv_proj_dim);
  OMNI_CHECK_INPUT(added_kv_proj_dim == 0 || added_kv_proj_dim == inner_dim(), source, ": key 'added_kv_proj_dim' is ",
                   added_kv_proj_dim, "; the image tokens arrive at the inner width ", inner_dim(),
                   " (num_attention_heads x attention_head_dim)");
  OMNI_CHECK_INPUT(pos_embed_seq_len == 0 || (image_dim > 0 && pos_embed_seq_len % 2 == 0), source,
                   ": key 'pos_embed_seq_len' is ", pos_embed_seq_len,
                   "; it needs 'image_dim' and an even length (two images' tokens)");
  if (is_animate()) {
    const std::pair<const char*, int64_t> sizes[] = {{"motion_encoder_size", motion_encoder_size},
                                                     {"motion_style_dim", motion_style_dim},
                                                     {"motion_dim", motion_dim},
                                                     {"motion_encoder_dim", motion_encoder_dim},
                                                     {"face_encoder_hidden_dim", face_encoder_hidden_dim},
                                                     {"face_encoder_num_heads", face_encoder_num_heads},
                                                     {"inject_face_latents_blocks", inject_face_latents_blocks},
                                                     {"motion_encoder_batch_size", motion_encoder_batch_size}};
    for (const auto& [key, value] : sizes)
      OMNI_CHECK_INPUT(value > 0, source, ": key '", key, "' must be positive, got ", value);
    OMNI_CHECK_INPUT(in_channels == 2 * latent_channels + 4, source, ": 'in_channels' ", in_channels,
                     " must be 2 x 'latent_channels' + 4 = ", 2 * latent_channels + 4);
    OMNI_CHECK_INPUT(motion_encoder_size >= 8 && (motion_encoder_size & (motion_encoder_size - 1)) == 0, source,
                     ": key 'motion_encoder_size' must be a power of two of at least 8, got ", motion_encoder_size);
    // diffusers indexes face_adapter[i / inject] after every block i that inject divides: a model whose last
    // such block has no adapter cannot run.
    OMNI_CHECK_INPUT(num_layers % inject_face_latents_blocks == 0, source, ": key 'num_layers' (", num_layers,
                     ") must be a multiple of 'inject_face_latents_blocks' (", inject_face_latents_blocks, ")");
    OMNI_CHECK_INPUT(motion_dim <= motion_encoder_dim, source, ": key 'motion_dim' (", motion_dim,
                     ") must not exceed 'motion_encoder_dim' (", motion_encoder_dim, "): its QR has that many columns");
  }
  if (is_vace()) {
    // diffusers requires layer 0 (the first VACE block adds the video's tokens to the context) and layers inside
    // the model; it pairs the k-th VACE block with the k-th listed layer in block order, so the list must ascend.
    bool ascending = true;
    std::string listed = std::to_string(vace_layers.front());
    for (size_t i = 1; i < vace_layers.size(); ++i) {
      ascending = ascending && vace_layers[i] > vace_layers[i - 1];
      listed += ", " + std::to_string(vace_layers[i]);
    }
    OMNI_CHECK_INPUT(vace_layers.front() == 0 && ascending && vace_layers.back() < num_layers, source,
                     ": key 'vace_layers' must ascend from 0 and stay below num_layers ", num_layers, ", found [",
                     listed, "]");
    OMNI_CHECK_INPUT(vace_in_channels > 0, source, ": key 'vace_in_channels' must be positive, got ", vace_in_channels);
  }
}

}  // namespace omni::models
