// Components from Wan2.2's original folders and from single files: which file, which names, which config.
#include "io/foreign_model.h"

#include <dirent.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "io/json_file.h"

namespace omni::io {

namespace {

using json = nlohmann::json;

// Names in `dir` (files only) that start with `prefix` and end with `suffix`, sorted.
std::vector<std::string> files_matching(const std::string& dir, const std::string& prefix, const std::string& suffix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (starts_with(name, prefix) && ends_with(name, suffix) && is_file(join_path(dir, name))) out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// The one file of `dir` matching; an input error listing what was expected or found otherwise.
std::string one_file(const std::string& dir, const std::string& prefix, const std::string& suffix, const char* what) {
  const auto found = files_matching(dir, prefix, suffix);
  OMNI_CHECK_INPUT(!found.empty(), dir, ": no ", what, " (expected a file ", prefix, "*", suffix,
                   ", as in the Wan-AI repositories)");
  if (found.size() > 1) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    OMNI_FAIL_INPUT(dir, ": several files could be the ", what, ": ", list, "; keep one, or name it with its flag");
  }
  return join_path(dir, found[0]);
}

// The shape of our tensor `name` in `ckpt`; an input error naming the file and what the model needs otherwise.
const std::vector<int64_t>& shape_of(const Checkpoint& ckpt, const std::string& name, size_t rank,
                                     const std::string& why) {
  OMNI_CHECK_INPUT(ckpt.contains(name), ckpt.path(), ": no tensor for '", name, "' (", why, ")");
  const auto& shape = ckpt.info(name).shape;
  OMNI_CHECK_INPUT(shape.size() == rank, ckpt.path(), ": tensor for '", name, "' has ", shape.size(),
                   " dimensions, expected ", rank);
  return shape;
}

// Blocks 0..N-1 present as `prefix<i><suffix>`.
int64_t count_blocks(const Checkpoint& ckpt, const std::string& prefix, const std::string& suffix) {
  int64_t n = 0;
  while (ckpt.contains(prefix + std::to_string(n) + suffix)) ++n;
  return n;
}

int64_t positive_key(const json& j, const char* key, const std::string& source) {
  auto it = j.find(key);
  OMNI_CHECK_INPUT(it != j.end() && it->is_number_integer() && it->get<int64_t>() > 0, source, ": key '", key,
                   "' must be a positive integer, found ", it == j.end() ? std::string("nothing") : it->dump());
  return it->get<int64_t>();
}

// diffusers' motion-encoder widths per resolution (transformer_wan_animate.py
// WAN_ANIMATE_MOTION_ENCODER_CHANNEL_SIZES, the table of Wan's EncoderApp): what a config without
// motion_encoder_channel_sizes means.
const std::map<int64_t, int64_t> kMotionEncoderChannels = {{4, 512},   {8, 512},  {16, 512}, {32, 512}, {64, 256},
                                                           {128, 128}, {256, 64}, {512, 32}, {1024, 16}};

// Wan2.2-Animate (a pose_patch_embedding): WanAnimateTransformer3DModel's own keys, from the tensor shapes (our
// names), as diffusers' scripts/convert_wan_to_diffusers.py states them for Wan2.2-Animate-14B (latent_channels
// 16, motion_encoder_size 512, motion_style_dim 512, motion_dim 20, motion_encoder_dim 512, face_encoder_hidden_dim
// 1024, face_encoder_num_heads 4, inject_face_latents_blocks 5; motion_encoder_channel_sizes and
// motion_encoder_batch_size left at their defaults). The original model hard-codes them (model_animate.py:
// Generator(size=512, style_dim=512, motion_dim=20), FaceEncoder(num_heads=4) of width 1024, num_layers // 5
// FaceBlocks); the shapes give the same numbers for it and the right ones for any smaller model.
void animate_config(const Checkpoint& ckpt, const json* wan_config, const std::string& wan_source, json* out) {
  json& c = *out;
  const int64_t layers = c["num_layers"].get<int64_t>();
  c["_class_name"] = "WanAnimateTransformer3DModel";
  c["latent_channels"] = shape_of(ckpt, "pose_patch_embedding.weight", 5, "the pose patch embedding")[1];
  // Motion encoder: R ResBlocks halve a size x size crop down to 4 x 4 (size = 2^(R + 2)); the widths per
  // resolution are the convolutions' output channels.
  const int64_t res_blocks = count_blocks(ckpt, "motion_encoder.res_blocks.", ".conv1.weight");
  OMNI_CHECK_INPUT(res_blocks >= 1 && res_blocks <= 20, ckpt.path(),
                   ": the motion encoder has no ResBlocks (motion_encoder.enc.net_app.convs.1 in Wan's names)");
  const int64_t size = int64_t{1} << (res_blocks + 2);
  std::map<int64_t, int64_t> widths;
  widths[size] = shape_of(ckpt, "motion_encoder.conv_in.weight", 4, "the motion encoder's first convolution")[0];
  for (int64_t j = 0; j < res_blocks; ++j)
    widths[size >> (j + 1)] = shape_of(ckpt, "motion_encoder.res_blocks." + std::to_string(j) + ".conv2.weight", 4,
                                       "a motion encoder ResBlock")[0];
  bool default_widths = true;
  json channel_sizes = json::object();
  for (const auto& [res, width] : widths) {
    channel_sizes[std::to_string(res)] = width;
    auto it = kMotionEncoderChannels.find(res);
    default_widths = default_widths && it != kMotionEncoderChannels.end() && it->second == width;
  }
  c["motion_encoder_channel_sizes"] = default_widths ? json(nullptr) : channel_sizes;
  c["motion_encoder_size"] = size;
  c["motion_style_dim"] =
      shape_of(ckpt, "motion_encoder.conv_out.weight", 4, "the motion encoder's last convolution")[0];
  // diffusers' motion network is 5 linear layers (motion_blocks, not a config key), as Wan's Encoder.fc.
  const int64_t linears = count_blocks(ckpt, "motion_encoder.motion_network.", ".weight");
  OMNI_CHECK_INPUT(linears == 5, ckpt.path(), ": the motion encoder has ", linears,
                   " linear layers (motion_encoder.enc.fc.N), expected 5 as Wan2.2-Animate's");
  c["motion_dim"] = shape_of(ckpt, "motion_encoder.motion_network.4.weight", 2, "the motion network's last layer")[0];
  const auto& direction = shape_of(ckpt, "motion_encoder.motion_synthesis_weight", 2, "the motion directions");
  c["motion_encoder_dim"] = direction[0];
  // Face encoder: conv1_local makes num_heads x hidden channels from the motion vector's width.
  const int64_t hidden = shape_of(ckpt, "face_encoder.conv2.weight", 3, "the face encoder's second convolution")[0];
  const auto& conv1 = shape_of(ckpt, "face_encoder.conv1_local.weight", 3, "the face encoder's first convolution");
  OMNI_CHECK_INPUT(conv1[0] % hidden == 0 && conv1[1] == direction[0], ckpt.path(),
                   ": the face encoder's first convolution ", at::IntArrayRef(conv1),
                   " does not take the motion vector's width ", direction[0], " to a multiple of its width ", hidden);
  c["face_encoder_hidden_dim"] = hidden;
  c["face_encoder_num_heads"] = conv1[0] / hidden;
  // One face adapter after every inject-th block from block 0: layers / adapters (40 / 8 = 5).
  const int64_t adapters = count_blocks(ckpt, "face_adapter.", ".to_q.weight");
  OMNI_CHECK_INPUT(adapters > 0 && layers % adapters == 0, ckpt.path(), ": ", adapters,
                   " face adapters (face_adapter.fuser_blocks.J) do not pair evenly with ", layers, " blocks");
  c["inject_face_latents_blocks"] = layers / adapters;
  c["motion_encoder_batch_size"] = 8;  // Wan's encode_bs (model_animate.py after_patch_embedding)
  if (wan_config != nullptr) {
    if (auto it = wan_config->find("motion_encoder_dim"); it != wan_config->end()) {
      const int64_t stated = positive_key(*wan_config, "motion_encoder_dim", wan_source);
      OMNI_CHECK_INPUT(stated == direction[0], wan_source, ": 'motion_encoder_dim' is ", stated, " but the weights in ",
                       ckpt.path(), " have ", direction[0]);
    }
  }
}

// The diffusers config of a Wan transformer from its tensor shapes (our names). `wan_config`: the WanModel
// config.json of the original layout, whose num_heads and eps are taken and whose sizes must agree.
json transformer_config(const Checkpoint& ckpt, const json* wan_config, const std::string& wan_source) {
  const auto& patch = shape_of(ckpt, "patch_embedding.weight", 5, "the patch embedding: [dim, in_dim, 1, 2, 2]");
  const int64_t dim = patch[0];
  const int64_t text_dim =
      shape_of(ckpt, "condition_embedder.text_embedder.linear_1.weight", 2, "the text embedding")[1];
  const int64_t freq_dim =
      shape_of(ckpt, "condition_embedder.time_embedder.linear_1.weight", 2, "the time embedding")[1];
  const int64_t ffn_dim = shape_of(ckpt, "blocks.0.ffn.net.0.proj.weight", 2, "block 0's feed-forward")[0];
  const int64_t layers = count_blocks(ckpt, "blocks.", ".scale_shift_table");
  const int64_t patch_volume = patch[2] * patch[3] * patch[4];
  const int64_t out_dim = shape_of(ckpt, "proj_out.weight", 2, "the output head")[0] / patch_volume;
  int64_t heads = 0;
  double eps = 1e-6;
  if (wan_config != nullptr) {
    heads = positive_key(*wan_config, "num_heads", wan_source);
    const std::pair<const char*, int64_t> sizes[] = {
        {"dim", dim}, {"in_dim", patch[1]}, {"ffn_dim", ffn_dim}, {"num_layers", layers}, {"out_dim", out_dim}};
    for (const auto& [key, value] : sizes) {
      const int64_t stated = positive_key(*wan_config, key, wan_source);
      OMNI_CHECK_INPUT(stated == value, wan_source, ": '", key, "' is ", stated, " but the weights in ", ckpt.path(),
                       " have ", value);
    }
    if (auto it = wan_config->find("eps"); it != wan_config->end() && it->is_number()) eps = it->get<double>();
  } else {
    // No config states the heads; every Wan2.1 / 2.2 model has 128-wide heads.
    OMNI_CHECK_INPUT(dim % 128 == 0, ckpt.path(), ": the model width ", dim,
                     " is not a multiple of 128, so its number of heads cannot be inferred (Wan models use 128-wide "
                     "heads); use it within a --model folder whose config.json states it");
    heads = dim / 128;
  }
  OMNI_CHECK_INPUT(dim % heads == 0, wan_source, ": num_heads ", heads, " does not divide the width ", dim);
  // Wan2.1's image models: the image embedder's input width (CLIP's), the added key/values at the model's width,
  // and FLF2V's position table length (img_emb.emb_pos: two images' tokens).
  json image_dim = nullptr, added_kv = nullptr, pos_len = nullptr;
  if (ckpt.contains("condition_embedder.image_embedder.norm1.weight")) {
    image_dim = shape_of(ckpt, "condition_embedder.image_embedder.norm1.weight", 1, "the image embedder's norm")[0];
    added_kv = shape_of(ckpt, "blocks.0.attn2.add_k_proj.weight", 2, "block 0's image key projection")[1];
    if (ckpt.contains("condition_embedder.image_embedder.pos_embed"))
      pos_len = shape_of(ckpt, "condition_embedder.image_embedder.pos_embed", 3, "the image position table")[1];
  }
  json out{{"_class_name", "WanTransformer3DModel"},
           {"patch_size", {patch[2], patch[3], patch[4]}},
           {"num_attention_heads", heads},
           {"attention_head_dim", dim / heads},
           {"in_channels", patch[1]},
           {"out_channels", out_dim},
           {"text_dim", text_dim},
           {"freq_dim", freq_dim},
           {"ffn_dim", ffn_dim},
           {"num_layers", layers},
           {"cross_attn_norm", true},
           {"qk_norm", "rms_norm_across_heads"},
           {"eps", eps},
           {"image_dim", image_dim},
           {"added_kv_proj_dim", added_kv},
           {"rope_max_seq_len", 1024},
           {"pos_embed_seq_len", pos_len}};
  // VACE (Wan's VaceWanModel): its blocks' count and the context's channels from the weights; the main blocks
  // they pair with from the config where it states vace_layers, else every (layers / K)-th from 0, as Wan's
  // VACE-1.3B (15 of 30) and VACE-14B (8 of 40) configs list them and ComfyUI infers them.
  if (ckpt.contains("vace_patch_embedding.weight")) {
    const int64_t k = count_blocks(ckpt, "vace_blocks.", ".scale_shift_table");
    OMNI_CHECK_INPUT(k > 0, ckpt.path(), ": vace_patch_embedding without VACE blocks (vace_blocks.0)");
    json vace_layers = json::array();
    if (wan_config != nullptr && wan_config->contains("vace_layers")) {
      vace_layers = (*wan_config)["vace_layers"];
      OMNI_CHECK_INPUT(vace_layers.is_array() && static_cast<int64_t>(vace_layers.size()) == k, wan_source,
                       ": 'vace_layers' must list one block per VACE block (", k, " in ", ckpt.path(), "), found ",
                       vace_layers.dump());
    } else {
      OMNI_CHECK_INPUT(layers % k == 0, ckpt.path(), ": ", k, " VACE blocks (vace_blocks.N) do not pair evenly with ",
                       layers, " blocks, and no config.json states vace_layers");
      for (int64_t i = 0; i < k; ++i) vace_layers.push_back(i * (layers / k));
    }
    out["_class_name"] = "WanVACETransformer3DModel";
    out["vace_layers"] = vace_layers;
    out["vace_in_channels"] = shape_of(ckpt, "vace_patch_embedding.weight", 5, "the VACE patch embedding")[1];
  }
  if (ckpt.contains("pose_patch_embedding.weight")) animate_config(ckpt, wan_config, wan_source, &out);
  return out;
}

// transformers' UMT5 config from the tensor shapes (our names).
json umt5_config(const Checkpoint& ckpt) {
  const std::string embed = ckpt.contains("shared.weight") ? "shared.weight" : "encoder.embed_tokens.weight";
  const auto& emb = shape_of(ckpt, embed, 2, "the token embedding");
  const auto& bias = shape_of(ckpt, "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", 2,
                              "block 0's relative position buckets");
  const int64_t heads = bias[1];
  const int64_t inner = shape_of(ckpt, "encoder.block.0.layer.0.SelfAttention.q.weight", 2, "block 0's query")[0];
  OMNI_CHECK_INPUT(inner % heads == 0, ckpt.path(), ": the query width ", inner, " is not a multiple of the ", heads,
                   " heads the relative attention bias has");
  return json{{"vocab_size", emb[0]},
              {"d_model", emb[1]},
              {"d_kv", inner / heads},
              {"d_ff", shape_of(ckpt, "encoder.block.0.layer.1.DenseReluDense.wi_0.weight", 2, "block 0's gate")[0]},
              {"num_layers", count_blocks(ckpt, "encoder.block.", ".layer.0.layer_norm.weight")},
              {"num_heads", heads},
              {"relative_attention_num_buckets", bias[0]},
              {"relative_attention_max_distance", 128},
              {"layer_norm_epsilon", 1e-6},
              {"feed_forward_proj", "gated-gelu"}};
}

// The latent normalization Wan's VAE classes hard-code (wan/modules/vae2_1.py Wan2_1_VAE, vae2_2.py Wan2_2_VAE),
// which the Diffusers repositories carry as latents_mean / latents_std.
const std::vector<double> kWan21Mean = {-0.7571, -0.7089, -0.9113, 0.1075,  -0.1745, 0.9653,  -0.1517, 1.5508,
                                        0.4134,  -0.0715, 0.5517,  -0.3632, -0.1922, -0.9497, 0.2503,  -0.2921};
const std::vector<double> kWan21Std = {2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                                       3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160};
const std::vector<double> kWan22Mean = {
    -0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174,  0.1838,  0.1557,  -0.1382, 0.0542,  0.2813,  0.0891,
    0.1570,  -0.0098, 0.0375,  -0.1825, -0.2246, -0.1207, -0.0698, 0.5109,  0.2665,  -0.2108, -0.2158, 0.2502,
    -0.2055, -0.0322, 0.1109,  0.1567,  -0.0729, 0.0899,  -0.2799, -0.1230, -0.0313, -0.1649, 0.0117,  0.0723,
    -0.2839, -0.2083, -0.0520, 0.3748,  0.0152,  0.1957,  0.1433,  -0.2944, 0.3573,  -0.0548, -0.1681, -0.0667};
const std::vector<double> kWan22Std = {0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344,
                                       0.5894, 1.0901, 0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804,
                                       0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999,
                                       0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887,
                                       0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744};

// AutoencoderKLWan's config from the tensor shapes (our names).
json vae_config(const Checkpoint& ckpt, const VaeNameShape& s) {
  const auto& conv_in = shape_of(ckpt, "encoder.conv_in.weight", 5, "the encoder's first convolution");
  const int64_t base = conv_in[0];
  const int64_t z = shape_of(ckpt, "post_quant_conv.weight", 5, "the latent projection")[0];
  std::vector<int64_t> mult;
  std::vector<bool> temporal;
  for (int i = 0; i < s.num_levels; ++i) {
    // A level's width: its first residual block's output channels; its downsampler halves time where it has a
    // time_conv.
    const std::string level = "encoder.down_blocks." + std::to_string(i) + ".";
    const std::string res =
        s.wan22 ? level + "resnets.0." : "encoder.down_blocks." + std::to_string(i * (s.num_res_blocks + 1)) + ".";
    const int64_t width = shape_of(ckpt, res + "conv2.weight", 5, "a residual block of the encoder")[0];
    OMNI_CHECK_INPUT(width % base == 0, ckpt.path(), ": encoder level ", i, " is ", width,
                     " channels wide, not a multiple of the base width ", base);
    mult.push_back(width / base);
    if (i + 1 < s.num_levels) {
      const std::string down =
          s.wan22 ? level + "downsampler."
                  : "encoder.down_blocks." + std::to_string(i * (s.num_res_blocks + 1) + s.num_res_blocks) + ".";
      temporal.push_back(ckpt.contains(down + "time_conv.weight"));
    }
  }
  const int64_t dec_width = shape_of(ckpt, "decoder.conv_in.weight", 5, "the decoder's first convolution")[0];
  OMNI_CHECK_INPUT(dec_width % mult.back() == 0, ckpt.path(), ": the decoder's width ", dec_width,
                   " is not a multiple of the last level's multiplier ", mult.back());
  const int64_t dec_base = dec_width / mult.back();
  const std::vector<double>* mean = z == 16 ? &kWan21Mean : z == 48 ? &kWan22Mean : nullptr;
  const std::vector<double>* std_ = z == 16 ? &kWan21Std : z == 48 ? &kWan22Std : nullptr;
  OMNI_CHECK_INPUT(mean != nullptr, ckpt.path(), ": a VAE with ", z,
                   " latent channels has no known latent normalization (Wan2.1's has 16, Wan2.2's 48); use it "
                   "within a --model folder whose vae/config.json states latents_mean and latents_std");
  return json{{"_class_name", "AutoencoderKLWan"},
              {"base_dim", base},
              {"decoder_base_dim", dec_base == base ? json(nullptr) : json(dec_base)},
              {"z_dim", z},
              {"dim_mult", mult},
              {"num_res_blocks", s.num_res_blocks},
              {"attn_scales", json::array()},
              {"temperal_downsample", temporal},
              {"dropout", 0.0},
              {"in_channels", conv_in[1]},
              {"out_channels", shape_of(ckpt, "decoder.conv_out.weight", 5, "the decoder's last convolution")[0]},
              {"is_residual", s.wan22},
              {"patch_size", s.wan22 ? json(2) : json(nullptr)},
              {"scale_factor_spatial", s.wan22 ? 16 : 8},
              {"scale_factor_temporal", 4},
              {"latents_mean", *mean},
              {"latents_std", *std_}};
}

// The structure behind a VAE's original flat (2.1) or nested (2.2) indices, counted from its stored names.
VaeNameShape vae_shape_from_names(const std::vector<std::string>& names, const std::string& path) {
  VaeNameShape s;
  s.wan22 = vae_original_is_wan22(names);
  // The largest index after `prefix`, plus one.
  auto count = [&](const std::string& prefix) {
    int n = 0;
    for (const auto& name : names) {
      if (!starts_with(name, prefix)) continue;
      const std::string rest = name.substr(prefix.size());
      n = std::max(n, std::atoi(rest.substr(0, rest.find('.')).c_str()) + 1);
    }
    return n;
  };
  if (s.wan22) {
    s.num_levels = count("encoder.downsamples.");
    // Level 0 of the encoder: num_res_blocks residual blocks and a downsampler.
    s.num_res_blocks = count("encoder.downsamples.0.downsamples.") - 1;
  } else {
    // Flat lists: the encoder has levels x (res + 1) - 1 entries, the decoder levels x (res + 2) - 1.
    const int enc = count("encoder.downsamples."), dec = count("decoder.upsamples.");
    s.num_levels = dec - enc;
    s.num_res_blocks = s.num_levels > 0 ? (enc + 1) / s.num_levels - 1 : 0;
  }
  OMNI_CHECK_INPUT(s.num_levels >= 2 && s.num_res_blocks >= 1, path,
                   ": the VAE's encoder / decoder blocks do not form a Wan VAE (", s.num_levels, " levels, ",
                   s.num_res_blocks, " residual blocks per level counted from the tensor names)");
  return s;
}

// Our config of `component` (transformer, transformer_2, text_encoder, vae) from its weights.
json infer_config(const std::string& component, const Checkpoint& ckpt, const ModelComponent& c, const json* wan_config,
                  const std::string& wan_source) {
  if (component == "text_encoder") return umt5_config(ckpt);
  if (component == "vae") return vae_config(ckpt, c.vae);
  return transformer_config(ckpt, wan_config, wan_source);
}

// transformers' CLIPVisionConfig of a CLIP image encoder from its tensor shapes (transformers' names, with or
// without "vision_model."). The heads are not in any shape: the width must be ViT-H/14's 1280 (16 heads of 80,
// exact GELU: open_clip's ViT-H, the encoder of every Wan image model); another width needs a folder with its
// config.json.
json clip_vision_config(const Checkpoint& ckpt, const std::string& flag) {
  const std::string pre = ckpt.contains("vision_model.pre_layrnorm.weight") ? "vision_model." : "";
  const int64_t dim = shape_of(ckpt, pre + "embeddings.class_embedding", 1, "the class token")[0];
  OMNI_CHECK_INPUT(dim == 1280, flag, " ", ckpt.path(), ": a CLIP image encoder of width ", dim,
                   "; from a single file only CLIP ViT-H/14 (width 1280, what Wan's image models use) is read, "
                   "since no tensor states the heads: give a folder with its config.json");
  const auto& patch = shape_of(ckpt, pre + "embeddings.patch_embedding.weight", 4, "the patch embedding");
  const int64_t positions = shape_of(ckpt, pre + "embeddings.position_embedding.weight", 2, "the position table")[0];
  int64_t side = 0;
  while ((side + 1) * (side + 1) <= positions - 1) ++side;
  OMNI_CHECK_INPUT(side * side == positions - 1, flag, " ", ckpt.path(), ": the position table's ", positions,
                   " rows are not a square grid of patches plus the class token");
  json c{{"hidden_size", dim},
         {"intermediate_size", shape_of(ckpt, pre + "encoder.layers.0.mlp.fc1.weight", 2, "layer 0's MLP")[0]},
         {"num_attention_heads", 16},
         {"num_hidden_layers", count_blocks(ckpt, pre + "encoder.layers.", ".layer_norm1.weight")},
         {"num_channels", patch[1]},
         {"patch_size", patch[2]},
         {"image_size", side * patch[2]},
         {"hidden_act", "gelu"},
         {"layer_norm_eps", 1e-5}};
  if (ckpt.contains("visual_projection.weight"))
    c["projection_dim"] = shape_of(ckpt, "visual_projection.weight", 2, "the projection")[0];
  return c;
}

// A CLIP image encoder file or folder (--image-encoder, or an original folder's models_clip_*.pth): transformers'
// names (a Diffusers image_encoder folder, ComfyUI's clip_vision_h.safetensors), Wan's own
// (models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth) or open_clip's (open_clip_pytorch_model.bin); of the
// last two only the vision tower is read.
ModelComponent image_encoder_from_file(const std::string& path, const std::string& flag, const json* config,
                                       const std::string& config_source) {
  ModelComponent c;
  c.checkpoint = path;
  const Checkpoint stored = Checkpoint::open(path);
  const auto layout = clip_name_layout(stored.names());
  OMNI_CHECK_INPUT(layout.has_value(), flag, " ", path,
                   ": not a CLIP image encoder: expected transformers' names (a tensor "
                   "'vision_model.pre_layrnorm.weight'), Wan's (models_clip_*.pth: 'visual.transformer.0.attn.to_qkv."
                   "weight') or open_clip's ('visual.transformer.resblocks.0.attn.in_proj_weight')");
  c.names = *layout;
  {
    const auto map = c.name_map("image_encoder");
    c.opened = std::make_shared<const Checkpoint>(stored.renamed(map ? &*map : nullptr));
  }
  const char* names = c.names == NameLayout::kOurs          ? "transformers names"
                      : c.names == NameLayout::kWanOriginal ? "Wan's CLIP names, vision tower"
                                                            : "open_clip names, vision tower";
  c.origin = (is_dir(path) ? "folder " : "file ") + path + " (" + flag + ", " + names + ")";
  if (config != nullptr) {
    c.config = *config;
    c.config_source = config_source;
  } else if (is_dir(path) && is_file(join_path(path, "config.json"))) {
    c.config_source = join_path(path, "config.json");
  } else {
    c.config = clip_vision_config(*c.opened, flag);
    c.config_source = "the tensor shapes of " + path + " (CLIP ViT-H/14)";
  }
  return c;
}

// Wan2.2-S2V-14B's published settings (wan/configs/wan_s2v_14B.py, as its config.json states them): which blocks
// the 12 audio injectors follow, for its 40 blocks.
const std::vector<int64_t> kS2VInjectLayers = {0, 4, 8, 12, 16, 20, 24, 27, 30, 33, 36, 39};

// WanModel_S2V's config.json for a transformer file that carries none (ComfyUI's wan2.2_s2v_14B_*.safetensors; Wan's
// names, any prefix stripped): the sizes from the tensor shapes, the settings no shape states as Wan2.2-S2V-14B's
// config has them (ComfyUI's WanModel_S2V holds the same). Which blocks the injectors follow is no shape: the
// published list, for the published 40 blocks and 12 injectors only; another count needs its config.json.
json s2v_config_from_shapes(const Checkpoint& ckpt, const std::string& flag) {
  const auto& patch = shape_of(ckpt, "patch_embedding.weight", 5, "the patch embedding: [dim, in_dim, 1, 2, 2]");
  const int64_t dim = patch[0];
  const int64_t layers = count_blocks(ckpt, "blocks.", ".modulation");
  const int64_t injectors = count_blocks(ckpt, "audio_injector.injector.", ".q.weight");
  OMNI_CHECK_INPUT(layers == 40 && injectors == static_cast<int64_t>(kS2VInjectLayers.size()), flag, " ", ckpt.path(),
                   ": a Wan2.2-S2V transformer of ", layers, " blocks and ", injectors,
                   " audio injectors without its config.json; which blocks the injectors follow (audio_inject_layers) "
                   "is known only for Wan2.2-S2V-14B's 40 and 12: give the folder with its config.json");
  // Every Wan model has 128-wide heads (transformer_config says the same for the other Wan transformers).
  OMNI_CHECK_INPUT(dim % 128 == 0, flag, " ", ckpt.path(), ": the model width ", dim,
                   " is not a multiple of 128, so its number of heads cannot be inferred; give the folder with its "
                   "config.json");
  // conv1_local makes num_audio_token tokens of width dim / 4 per audio frame from wav2vec2's width.
  const auto& local = shape_of(ckpt, "casual_audio_encoder.encoder.conv1_local.conv.weight", 3,
                               "the audio encoder's first convolution");
  OMNI_CHECK_INPUT(local[0] % (dim / 4) == 0, flag, " ", ckpt.path(), ": the audio encoder's first convolution makes ",
                   local[0], " channels, not a multiple of the token width ", dim / 4);
  const int64_t patch_volume = patch[2] * patch[3] * patch[4];
  return json{{"_class_name", "WanModel_S2V"},
              {"model_type", "s2v"},
              {"dim", dim},
              {"ffn_dim", shape_of(ckpt, "blocks.0.ffn.0.weight", 2, "block 0's feed-forward")[0]},
              {"freq_dim", shape_of(ckpt, "time_embedding.0.weight", 2, "the time embedding")[1]},
              {"num_heads", dim / 128},
              {"num_layers", layers},
              {"in_dim", patch[1]},
              {"out_dim", shape_of(ckpt, "head.head.weight", 2, "the output head")[0] / patch_volume},
              {"text_len", 512},
              {"eps", 1e-6},
              {"cond_dim", shape_of(ckpt, "cond_encoder.weight", 5, "the pose encoder")[1]},
              {"audio_dim", local[1]},
              {"num_audio_token", local[0] / (dim / 4)},
              {"audio_inject_layers", kS2VInjectLayers},
              {"enable_adain", ckpt.contains("audio_injector.injector_adain_layers.0.linear.weight")},
              {"adain_mode", "attn_norm"},
              {"zero_timestep", true},
              {"add_last_motion", true},
              {"enable_motioner", ckpt.contains("motioner.patch_embedding.weight")},
              {"enable_framepack", ckpt.contains("frame_packer.proj.weight")},
              {"framepack_drop_mode", "padd"}};
}

// transformers' Wav2Vec2Config of a wav2vec2 file that carries none (ComfyUI's wav2vec2_large_english_fp16:
// Wav2Vec2ForCTC's names under "wav2vec2.", or Wav2Vec2Model's bare ones): the sizes from the shapes, and what no
// shape states as every published wav2vec2 has it (ComfyUI's loader assumes the same): 64-wide heads (base 12 x 64,
// large 16 x 64), the feature extractor's strides (5, 2, 2, 2, 2, 2, 2), layer-norm eps 1e-5, GELU. A layer norm
// after every convolution is wav2vec2-large's "layer" feature extractor, whose encoder layers are pre-norm.
json wav2vec2_config_from_shapes(const Checkpoint& ckpt, const std::string& flag) {
  const std::string pre = ckpt.contains("wav2vec2.encoder.layer_norm.weight") ? "wav2vec2." : "";
  const int64_t hidden = shape_of(ckpt, pre + "encoder.layer_norm.weight", 1, "the encoder's final norm")[0];
  OMNI_CHECK_INPUT(hidden % 64 == 0, flag, " ", ckpt.path(), ": a wav2vec2 of width ", hidden,
                   ", not a multiple of 64, so its heads cannot be inferred (wav2vec2's are 64 wide); give its "
                   "transformers folder (config.json beside the weights)");
  const std::vector<int64_t> strides = {5, 2, 2, 2, 2, 2, 2};
  const std::string convs = pre + "feature_extractor.conv_layers.";
  const int64_t n = count_blocks(ckpt, convs, ".conv.weight");
  OMNI_CHECK_INPUT(n == static_cast<int64_t>(strides.size()), flag, " ", ckpt.path(), ": ", n,
                   " feature-extractor convolutions; wav2vec2 has 7");
  json dims = json::array(), kernels = json::array();
  for (int64_t i = 0; i < n; ++i) {
    const std::string conv = convs + std::to_string(i);
    OMNI_CHECK_INPUT(ckpt.contains(conv + ".layer_norm.weight"), flag, " ", ckpt.path(), ": convolution ", i,
                     " has no layer norm (", conv,
                     ".layer_norm.weight): a wav2vec2-base feature extractor, which only wav2vec2-large's "
                     "configuration (Wan2.2-S2V's) is built for");
    const auto& w = shape_of(ckpt, conv + ".conv.weight", 3, "a feature-extractor convolution");
    dims.push_back(w[0]);
    kernels.push_back(w[2]);
  }
  const std::string pos = pre + "encoder.pos_conv_embed.conv.";
  const std::string kernel =
      ckpt.contains(pos + "weight_v") ? pos + "weight_v" : pos + "parametrizations.weight.original1";
  const auto& v = shape_of(ckpt, kernel, 3, "the positional convolution's kernel");
  OMNI_CHECK_INPUT(v[1] > 0 && hidden % v[1] == 0, flag, " ", ckpt.path(), ": the positional convolution's kernel ",
                   at::IntArrayRef(v), " does not group the width ", hidden);
  json c{{"model_type", "wav2vec2"},
         {"hidden_size", hidden},
         {"intermediate_size", shape_of(ckpt, pre + "encoder.layers.0.feed_forward.intermediate_dense.weight", 2,
                                        "layer 0's feed-forward")[0]},
         {"num_attention_heads", hidden / 64},
         {"num_hidden_layers", count_blocks(ckpt, pre + "encoder.layers.", ".attention.q_proj.weight")},
         {"conv_dim", dims},
         {"conv_kernel", kernels},
         {"conv_stride", strides},
         {"conv_bias", ckpt.contains(convs + "0.conv.bias")},
         {"num_conv_pos_embeddings", v[2]},
         {"num_conv_pos_embedding_groups", hidden / v[1]},
         {"layer_norm_eps", 1e-5},
         {"feat_extract_norm", "layer"},
         {"do_stable_layer_norm", true},
         {"hidden_act", "gelu"},
         {"feat_extract_activation", "gelu"}};
  if (ckpt.contains("lm_head.weight")) c["vocab_size"] = shape_of(ckpt, "lm_head.weight", 2, "the CTC head")[0];
  return c;
}

// Wan2.2-S2V's audio encoder (--audio-encoder, or an S2V folder's wav2vec2-large-xlsr-53-english/): transformers'
// wav2vec2 folder (config.json beside the weights), or one weight file (ComfyUI's wav2vec2_large_english_fp16).
// Its names are read as stored (models::Wav2Vec2Config::resolve_names tells the prefix and the weight-norm names).
ModelComponent audio_encoder_from_file(const std::string& path, const std::string& flag, const json* config,
                                       const std::string& config_source) {
  ModelComponent c;
  c.checkpoint = path;
  const bool folder = is_dir(path) && is_file(join_path(path, "config.json"));
  if (is_dir(path)) c.dir = path;  // its preprocessor_config.json, where it has one
  c.opened = std::make_shared<const Checkpoint>(Checkpoint::open(path));
  OMNI_CHECK_INPUT(
      c.opened->contains("wav2vec2.encoder.layer_norm.weight") || c.opened->contains("encoder.layer_norm.weight"), flag,
      " ", path,
      ": not a wav2vec2 audio encoder (no tensor 'wav2vec2.encoder.layer_norm.weight' or "
      "'encoder.layer_norm.weight'; Wan2.2-S2V takes wav2vec2-large-xlsr-53-english, or ComfyUI's "
      "wav2vec2_large_english file)");
  c.origin = (is_dir(path) ? "folder " : "file ") + path + " (" + flag + ", transformers' wav2vec2 names)";
  if (config != nullptr) {
    c.config = *config;
    c.config_source = config_source;
  } else if (folder) {
    c.config_source = join_path(path, "config.json");
    c.config = read_json(c.config_source);  // kept by a file that replaces this folder's weights
  } else {
    c.config = wav2vec2_config_from_shapes(*c.opened, flag);
    c.config_source = "the tensor shapes of " + path + " (wav2vec2-large's configuration)";
  }
  return c;
}

std::string layout_text(NameLayout names, const std::string& prefix) {
  if (names == NameLayout::kOurs) return "diffusers names";
  return prefix.empty() ? "original Wan2.2 names" : "original Wan2.2 names under " + prefix;
}

}  // namespace

std::optional<NameMap> ModelComponent::name_map(const std::string& component) const {
  if (names == NameLayout::kOurs) return std::nullopt;
  NameMap m;
  m.strip_prefix = strip_prefix;
  if (component == "image_encoder") {
    const NameLayout layout = names;
    m.table = layout == NameLayout::kOpenClip ? "open_clip's CLIP (visual.*)" : "Wan's CLIP (wan/modules/clip.py)";
    m.rename = [layout](const std::string& n) { return clip_name_from_original(n, layout); };
    m.split = [layout](const std::string& n) { return clip_fused_qkv_names(n, layout); };
    m.skip = clip_skipped;
    m.squeeze_leading = clip_squeezed;
  } else if (component == "text_encoder") {
    m.table = "Wan's T5 encoder (wan/modules/t5.py)";
    m.rename = umt5_name_from_wan;
  } else if (component == "vae") {
    m.table = vae.wan22 ? "the Wan2.2 VAE (wan/modules/vae2_2.py)" : "the Wan2.1 VAE (wan/modules/vae2_1.py)";
    const VaeNameShape shape = vae;
    m.rename = [shape](const std::string& n) { return vae_name_from_original(n, shape); };
  } else {
    m.table = "a Wan2.2 transformer (wan/modules/model.py; Wan2.2-Animate: wan/modules/animate/model_animate.py)";
    m.rename = transformer_name_from_original;
    m.split = transformer_fused_kv_names;
    m.skip = transformer_skipped;
    m.squeeze_leading = transformer_squeezed;
  }
  return m;
}

std::string component_flag(const std::string& component) {
  std::string flag = "--" + component;
  std::replace(flag.begin(), flag.end(), '_', '-');
  return flag;
}

const std::vector<std::string>& file_components() {
  static const std::vector<std::string> names = {"transformer", "transformer_2", "text_encoder", "vae",
                                                 "tokenizer",   "image_encoder", "audio_encoder"};
  return names;
}

ModelComponent audio_processor_of(const std::string& dir) {
  ModelComponent c;
  const std::string path = dir.empty() ? std::string() : join_path(dir, "preprocessor_config.json");
  if (!path.empty() && is_file(path)) {
    c.config = read_json(path);
    c.config_source = path;
  } else {
    c.config = json::object();
    c.config_source = "transformers' Wav2Vec2FeatureExtractor defaults (those of wav2vec2-large-xlsr-53-english)";
  }
  c.origin = c.config_source;
  return c;
}

ModelComponent component_from_file(const std::string& component, const std::string& path, const std::string& flag,
                                   const nlohmann::json* config, const std::string& config_source) {
  ModelComponent c;
  if (component == "tokenizer") {
    OMNI_CHECK_INPUT(is_dir(path), flag, " ", path,
                     ": expected the tokenizer's folder (tokenizer.json or spiece.model, e.g. google/umt5-xxl/)");
    c.dir = path;
    c.origin = "folder " + path + " (" + flag + ")";
    c.config_source = join_path(path, "tokenizer_config.json");
    return c;
  }
  OMNI_CHECK_INPUT(is_file(path) || is_dir(path), flag, " ", path, ": no such file or folder");
  if (component == "image_encoder") return image_encoder_from_file(path, flag, config, config_source);
  if (component == "audio_encoder") return audio_encoder_from_file(path, flag, config, config_source);
  const bool transformer = component == "transformer" || component == "transformer_2";
  // A folder with a config.json is read with it: a diffusers component folder, or an original expert folder.
  const json* wan_config = nullptr;
  json folder_config;
  std::string folder_config_path;
  if (is_dir(path) && is_file(join_path(path, "config.json"))) {
    folder_config_path = join_path(path, "config.json");
    folder_config = read_json(folder_config_path);
  }
  c.checkpoint = path;
  const Checkpoint stored = Checkpoint::open(path);  // names as stored (quantization notes left out)
  std::vector<std::string> names = stored.names();
  if (transformer && std::any_of(names.begin(), names.end(),
                                 [](const std::string& n) { return starts_with(n, kComfyTransformerPrefix); })) {
    c.strip_prefix = kComfyTransformerPrefix;
    for (auto& n : names)
      if (starts_with(n, c.strip_prefix)) n = n.substr(c.strip_prefix.size());
  }
  // Wan2.2-S2V-14B's transformer (WanModel_S2V: audio injectors, frame packer, pose encoder): read under Wan's
  // own names by models::WanS2VTransformer (diffusers has no S2V model to convert to), with its config.json.
  const bool s2v_config = folder_config.is_object() && (folder_config.value("_class_name", "") == "WanModel_S2V" ||
                                                        folder_config.value("model_type", "") == "s2v");
  const bool s2v_names = std::any_of(names.begin(), names.end(), [](const std::string& n) {
    return starts_with(n, "casual_audio_encoder.") || starts_with(n, "audio_injector.");
  });
  if (transformer && (s2v_config || s2v_names)) {
    // A file replacing an S2V folder's transformer (ComfyUI's, say) takes that folder's config; a file alone, the
    // published one's (s2v_config_from_shapes).
    const bool given_s2v = config != nullptr && config->value("_class_name", "") == "WanModel_S2V";
    OMNI_CHECK_INPUT(config == nullptr || given_s2v, flag, " ", path,
                     ": Wan2.2-S2V's transformer cannot replace this model's transformer (", config_source, ")");
    OMNI_CHECK_INPUT(s2v_names, flag, " ", path,
                     ": config.json is Wan2.2-S2V's (WanModel_S2V) but the weights have no audio injector "
                     "(audio_injector.*)");
    c.names = NameLayout::kWanOriginal;
    if (c.strip_prefix.empty()) {
      c.opened = std::make_shared<const Checkpoint>(stored);
    } else {
      // ComfyUI keeps Wan's names under its prefix (comfy/ldm/wan/model.py's WanModel_S2V).
      NameMap unprefixed;
      unprefixed.table = "Wan2.2-S2V's names under ComfyUI's prefix";
      unprefixed.strip_prefix = c.strip_prefix;
      unprefixed.rename = [](const std::string& n) { return std::optional<std::string>(n); };
      c.opened = std::make_shared<const Checkpoint>(stored.renamed(&unprefixed));
    }
    if (given_s2v) {
      c.config = *config;
      c.config_source = config_source;
    } else if (s2v_config) {
      c.config = folder_config;
      (*c.config)["_class_name"] = "WanModel_S2V";
      c.config_source = folder_config_path;
    } else {
      c.config = s2v_config_from_shapes(*c.opened, flag);
      c.config_source = "the tensor shapes of " + path + " and Wan2.2-S2V-14B's published config";
      OMNI_DEBUG(flag, " ", path, ": the transformer config from ", c.config_source, ": ", c.config->dump());
    }
    c.origin = (is_dir(path) ? "folder " : "file ") + path + " (" + flag + ", Wan2.2-S2V's WanModel_S2V names" +
               (c.strip_prefix.empty() ? "" : ", ComfyUI's prefix") + ")";
    return c;
  }
  OMNI_CHECK_INPUT(!transformer || config == nullptr || config->value("_class_name", "") != "WanModel_S2V", flag, " ",
                   path,
                   ": this model is Wan2.2-S2V; its transformer is a WanModel_S2V checkpoint (audio_injector.*, "
                   "casual_audio_encoder.*), which this file is not");
  std::optional<NameLayout> layout = transformer          ? transformer_name_layout(names)
                                     : component == "vae" ? vae_name_layout(names)
                                                          : umt5_name_layout(names);
  const char* expected = transformer          ? "'head.modulation' (Wan2.2 / ComfyUI names) or 'scale_shift_table' "
                                                "(diffusers names)"
                         : component == "vae" ? "'decoder.middle.0.residual.0.gamma' (Wan2.2 / ComfyUI names) or "
                                                "'decoder.mid_block.resnets.0.norm1.gamma' (diffusers names)"
                                              : "'token_embedding.weight' (Wan's T5) or 'encoder.block.0...' "
                                                "(transformers' UMT5)";
  OMNI_CHECK_INPUT(layout.has_value(), flag, " ", path, ": not the weights of a ", component,
                   " of Wan2.2: expected a tensor ", expected);
  c.names = *layout;
  if (component == "vae" && c.names == NameLayout::kWanOriginal) c.vae = vae_shape_from_names(names, path);
  {
    const auto map = c.name_map(component);
    c.opened = std::make_shared<const Checkpoint>(stored.renamed(map ? &*map : nullptr));
  }
  c.origin =
      (is_dir(path) ? "folder " : "file ") + path + " (" + flag + ", " + layout_text(c.names, c.strip_prefix) + ")";
  if (config != nullptr) {
    c.config = *config;
    c.config_source = config_source;
    return c;
  }
  if (!folder_config_path.empty() && c.names == NameLayout::kOurs) {
    c.config_source = folder_config_path;  // a diffusers component folder: its own config
    return c;
  }
  if (!folder_config_path.empty() && transformer) wan_config = &folder_config;
  c.config = infer_config(component, *c.opened, c, wan_config, folder_config_path);
  c.config_source =
      wan_config ? folder_config_path + " and the tensor shapes of " + path : "the tensor shapes of " + path;
  // What was inferred, for --log-level debug (the layouts tests compare it with the references' configs).
  OMNI_DEBUG(flag, " ", path, ": the ", component, " config from ", c.config_source, ": ", c.config->dump());
  return c;
}

std::optional<ModelComponent> tokenizer_carried_by(const std::string& text_encoder_path) {
  if (!is_file(text_encoder_path) || !ends_with(text_encoder_path, ".safetensors")) return std::nullopt;
  if (!open_tensor_file(text_encoder_path)->contains("spiece_model")) return std::nullopt;
  ModelComponent c;
  c.spiece_file = text_encoder_path;
  c.origin = "tensor spiece_model of " + text_encoder_path + " (the SentencePiece model the file carries)";
  c.config_source = c.origin;
  return c;
}

bool is_original_layout(const std::string& dir) {
  if (!is_dir(dir) || is_file(join_path(dir, "model_index.json"))) return false;
  auto wan_model = [](const std::string& d) {
    if (!is_file(join_path(d, "config.json"))) return false;
    const json j = read_json(join_path(d, "config.json"));
    return j.is_object() && j.contains("dim") && j.contains("num_heads") && j.contains("in_dim");
  };
  if (is_dir(join_path(dir, "high_noise_model")) || is_dir(join_path(dir, "low_noise_model")))
    return wan_model(join_path(dir, "high_noise_model")) || wan_model(join_path(dir, "low_noise_model"));
  return wan_model(dir);
}

std::map<std::string, ModelComponent> original_layout_components(const std::string& dir) {
  std::map<std::string, ModelComponent> out;
  const bool experts = is_dir(join_path(dir, "high_noise_model")) || is_dir(join_path(dir, "low_noise_model"));
  auto expert = [&](const std::string& component, const std::string& folder) {
    OMNI_CHECK_INPUT(is_file(join_path(folder, "config.json")), folder,
                     ": no config.json (the Wan-AI repositories have one beside each expert's weights)");
    ModelComponent c = component_from_file(component, folder, "--model");
    OMNI_CHECK_INPUT(c.names == NameLayout::kWanOriginal, folder,
                     ": the weights carry diffusers names in an original-layout folder; expected WanModel names "
                     "(blocks.N.self_attn...)");
    c.origin = "folder " + folder + " (Wan2.2 original layout)";
    out[component] = std::move(c);
  };
  if (experts) {
    expert("transformer", join_path(dir, "high_noise_model"));
    expert("transformer_2", join_path(dir, "low_noise_model"));
  } else {
    expert("transformer", dir);
  }
  const std::string t5 = one_file(dir, "models_t5_", ".pth", "T5 text encoder weights");
  out["text_encoder"] = component_from_file("text_encoder", t5, "--model");
  out["text_encoder"].origin = "file " + t5 + " (Wan2.2 original layout)";
  const std::string vae = one_file(dir, "Wan2.", "_VAE.pth", "VAE weights");
  out["vae"] = component_from_file("vae", vae, "--model");
  out["vae"].origin = "file " + vae + " (Wan2.2 original layout)";
  // Wan2.1's image models (I2V-14B, FLF2V-14B) and Wan2.2-Animate-14B carry their CLIP:
  // models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth (Wan's names; its vision tower is the image encoder).
  // Whether the transformer needs one is the model spec's to say.
  if (!files_matching(dir, "models_clip_", ".pth").empty()) {
    const std::string clip = one_file(dir, "models_clip_", ".pth", "CLIP image encoder weights");
    out["image_encoder"] = component_from_file("image_encoder", clip, "--model");
    out["image_encoder"].origin = "file " + clip + " (Wan original layout, the CLIP's vision tower)";
  }
  // Wan2.2-S2V-14B: its wav2vec2 (transformers' Wav2Vec2ForCTC folder, read by models::Wav2Vec2Model) and the
  // feature extractor's settings beside it. Without the folder, --audio-encoder must give it (ModelDir says so).
  const std::string audio = join_path(dir, "wav2vec2-large-xlsr-53-english");
  if (out["transformer"].config && out["transformer"].config->value("_class_name", "") == "WanModel_S2V" &&
      is_dir(audio)) {
    OMNI_CHECK_INPUT(is_file(join_path(audio, "config.json")) && is_file(join_path(audio, "preprocessor_config.json")),
                     audio,
                     ": incomplete: expected config.json, preprocessor_config.json and the weights, as "
                     "Wan-AI/Wan2.2-S2V-14B has them");
    out["audio_encoder"] = component_from_file("audio_encoder", audio, "--model");
    out["audio_encoder"].origin = "folder " + audio + " (Wan2.2-S2V original layout, transformers' wav2vec2)";
    out["audio_processor"] = audio_processor_of(audio);
  }
  const std::string tokenizer = join_path(dir, "google/umt5-xxl");
  if (is_dir(tokenizer)) {
    out["tokenizer"] = component_from_file("tokenizer", tokenizer, "--model");
    out["tokenizer"].origin = "folder " + tokenizer + " (Wan2.2 original layout)";
  }
  return out;
}

OriginalDefaults original_defaults(int64_t in_channels, bool two_experts, const std::string& source, bool vace,
                                   bool animate, bool s2v) {
  // wan/configs: t2v_A14B (shift 12, boundary 0.875), i2v_A14B (shift 5, boundary 0.9), ti2v_5B (shift 5).
  OriginalDefaults d;
  if (s2v) {
    // Wan2.2-S2V-14B (wan/configs/wan_s2v_14B.py): the 16-channel noise alone, one transformer, sample_shift 3.
    OMNI_CHECK_INPUT(in_channels == 16 && !two_experts, source, ": a Wan2.2-S2V transformer with ", in_channels,
                     " input channels and ", two_experts ? "two experts" : "one expert",
                     " (Wan2.2-S2V-14B: 16 channels, one transformer)");
    d.pipeline_class = "WanS2VPipeline";
    d.sample_shift = 3.0;
  } else if (animate) {
    // Wan2.2-Animate-14B (wan/configs/wan_animate_14B.py): one transformer; the noisy latents, the mask and the
    // reference / previous-segment latents (16 + 4 + 16). diffusers' converter gives it UniPC with flow_shift 5
    // (Wan's own sample_shift 5.0), as the Diffusers repository's scheduler.
    OMNI_CHECK_INPUT(in_channels == 36 && !two_experts, source, ": a Wan2.2-Animate transformer with ", in_channels,
                     " input channels and ", two_experts ? "two experts" : "one expert",
                     " (Wan2.2-Animate-14B: 36 channels, one transformer)");
    d.pipeline_class = "WanAnimatePipeline";
    d.sample_shift = 5.0;
  } else if (vace) {
    // VACE on the T2V models: Wan2.2-VACE-Fun-A14B as T2V-A14B (two experts), Wan2.1-VACE with its preset's shift.
    OMNI_CHECK_INPUT(in_channels == 16, source, ": a VACE transformer with ", in_channels,
                     " input channels (Wan's VACE models take 16)");
    d.pipeline_class = "WanVACEPipeline";
    if (two_experts) {
      d.boundary_ratio = 0.875;
      d.sample_shift = 12.0;
    } else {
      d.shift_from_preset = true;
    }
  } else if (in_channels == 16 && two_experts) {
    d.pipeline_class = "WanPipeline";
    d.boundary_ratio = 0.875;
    d.sample_shift = 12.0;
  } else if (in_channels == 36 && two_experts) {
    d.pipeline_class = "WanImageToVideoPipeline";
    d.boundary_ratio = 0.9;
    d.sample_shift = 5.0;
  } else if (in_channels == 48 && !two_experts) {
    d.pipeline_class = "WanPipeline";
    d.expand_timesteps = true;
    d.sample_shift = 5.0;
  } else if ((in_channels == 16 || in_channels == 36) && !two_experts) {
    // Wan2.1 T2V-1.3B / 14B and I2V-14B / FLF2V-14B (a Wan2.2 expert alone looks the same): the model's preset
    // gives the official shift per model and size.
    d.pipeline_class = in_channels == 16 ? "WanPipeline" : "WanImageToVideoPipeline";
    d.shift_from_preset = true;
  } else {
    OMNI_FAIL_INPUT(source, ": a transformer with ", in_channels, " input channels and ",
                    two_experts ? "two experts" : "one expert",
                    " is none of Wan's models (Wan2.2 T2V-A14B: 16 channels, two experts; I2V-A14B: 36, two; TI2V-5B: "
                    "48, one; Wan2.1: 16 or 36, one)");
  }
  return d;
}

json unipc_scheduler_config(double shift) {
  return json{{"_class_name", "UniPCMultistepScheduler"},
              {"num_train_timesteps", 1000},
              {"prediction_type", "flow_prediction"},
              {"use_flow_sigmas", true},
              {"flow_shift", shift},
              {"solver_order", 2},
              {"solver_type", "bh2"},
              {"predict_x0", true},
              {"lower_order_final", true},
              {"final_sigmas_type", "zero"},
              {"timestep_spacing", "linspace"},
              {"steps_offset", 0}};
}

}  // namespace omni::io
