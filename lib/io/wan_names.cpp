// Name tables from Wan2.2's original layout (and ComfyUI's, which shares it) to ours. Each is a walk over the
// dotted parts of a name: clearer than chains of substring replacements, and a name no rule takes is refused
// rather than passed through under a wrong name.
#include "io/wan_names.h"

#include <algorithm>
#include <cstdlib>
#include <map>

#include "core/files.h"

namespace omni::io {

namespace {

std::vector<std::string> split(const std::string& name) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = name.find('.', start);
    parts.push_back(name.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) return parts;
    start = dot + 1;
  }
}

std::string join(const std::vector<std::string>& parts, size_t from, size_t to) {
  std::string out;
  for (size_t i = from; i < to && i < parts.size(); ++i) out += (out.empty() ? "" : ".") + parts[i];
  return out;
}

// A block index: decimal digits only ("07" is not one).
bool parse_index(const std::string& s, int* out) {
  if (s.empty() || s.size() > 6 || (s.size() > 1 && s[0] == '0')) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  *out = std::atoi(s.c_str());
  return true;
}

bool is_param(const std::string& s) {
  return s == "weight" || s == "bias";
}

// blocks.N.<rest> (or VACE's vace_blocks.N.<rest>: `prefix`) of the original transformer -> ours.
std::optional<std::string> transformer_block_name(const std::string& prefix, int n, const std::vector<std::string>& p) {
  // p: the parts after "blocks.N".
  const std::string out = prefix + std::to_string(n) + ".";
  // VACE blocks (Wan's VaceWanAttentionBlock) project the context in (block 0) and their hint out.
  if (prefix == "vace_blocks." && p.size() == 2 && is_param(p[1])) {
    if (p[0] == "before_proj") return out + "proj_in." + p[1];
    if (p[0] == "after_proj") return out + "proj_out." + p[1];
  }
  if (p.size() == 1 && p[0] == "modulation") return out + "scale_shift_table";
  if (p.size() == 2 && p[0] == "norm3" && is_param(p[1])) return out + "norm2." + p[1];
  if (p.size() == 3 && p[0] == "ffn" && is_param(p[2])) {
    if (p[1] == "0") return out + "ffn.net.0.proj." + p[2];
    if (p[1] == "2") return out + "ffn.net.2." + p[2];
    return std::nullopt;
  }
  if (p.size() == 3 && (p[0] == "self_attn" || p[0] == "cross_attn") && is_param(p[2])) {
    const std::string attn = out + (p[0] == "self_attn" ? "attn1." : "attn2.");
    // Wan2.1's image models' cross-attention (WanI2VCrossAttention) adds k_img, v_img and norm_k_img: diffusers'
    // added key/values.
    static const std::map<std::string, std::string> kProj = {
        {"q", "to_q"},           {"k", "to_k"},           {"v", "to_v"},
        {"o", "to_out.0"},       {"norm_q", "norm_q"},    {"norm_k", "norm_k"},
        {"k_img", "add_k_proj"}, {"v_img", "add_v_proj"}, {"norm_k_img", "norm_added_k"}};
    auto it = kProj.find(p[1]);
    if (it == kProj.end()) return std::nullopt;
    if (starts_with(p[1], "norm") && p[2] != "weight") return std::nullopt;
    if (p[0] == "self_attn" && ends_with(p[1], "_img")) return std::nullopt;
    return attn + it->second + "." + p[2];
  }
  return std::nullopt;
}

// One residual block's inner names (original residual.K / shortcut) -> ours (norm1, conv1, norm2, conv2,
// conv_shortcut). `p` starts at "residual" or "shortcut".
std::optional<std::string> vae_residual_name(const std::vector<std::string>& p, size_t at) {
  if (p.size() != at + 2 && p.size() != at + 3) return std::nullopt;
  if (p[at] == "shortcut" && p.size() == at + 2 && is_param(p[at + 1])) return "conv_shortcut." + p[at + 1];
  if (p[at] != "residual" || p.size() != at + 3) return std::nullopt;
  const std::string& k = p[at + 1];
  const std::string& leaf = p[at + 2];
  if (k == "0" && leaf == "gamma") return std::string("norm1.gamma");
  if (k == "2" && is_param(leaf)) return "conv1." + leaf;
  if (k == "3" && leaf == "gamma") return std::string("norm2.gamma");
  if (k == "6" && is_param(leaf)) return "conv2." + leaf;
  return std::nullopt;
}

// A resample's inner names are the same in both layouts: resample.1.{weight,bias}, time_conv.{weight,bias}.
std::optional<std::string> vae_resample_name(const std::vector<std::string>& p, size_t at) {
  if (p.size() == at + 3 && p[at] == "resample" && p[at + 1] == "1" && is_param(p[at + 2]))
    return "resample.1." + p[at + 2];
  if (p.size() == at + 2 && p[at] == "time_conv" && is_param(p[at + 1])) return "time_conv." + p[at + 1];
  return std::nullopt;
}

// Wan2.2-Animate's motion encoder (wan/modules/animate/motion_encoder.py Generator; diffusers'
// convert_animate_motion_encoder_weights, scripts/convert_wan_to_diffusers.py): `p` is the whole name, whose first
// part is "motion_encoder". enc.net_app.convs is [ConvLayer(3 -> C, 1x1), R ResBlocks, EqualConv2d(4x4, no bias)];
// a ConvLayer is a Sequential [Blur (downsampling only), EqualConv2d, FusedLeakyReLU (its [1, C, 1, 1] bias)].
std::optional<std::string> motion_encoder_name(const std::vector<std::string>& p) {
  const std::string me = "motion_encoder.";
  if (p.size() == 4 && p[1] == "dec" && p[2] == "direction" && p[3] == "weight") return me + "motion_synthesis_weight";
  int i = 0;
  if (p.size() == 5 && p[1] == "enc" && p[2] == "fc" && parse_index(p[3], &i) && is_param(p[4]))
    return me + "motion_network." + p[3] + "." + p[4];
  int k = 0;
  if (p.size() < 6 || p[1] != "enc" || p[2] != "net_app" || p[3] != "convs" || !parse_index(p[4], &k))
    return std::nullopt;
  // convs.K.weight: the final 4x4 convolution (the only entry that is a bare EqualConv2d).
  if (p.size() == 6 && k >= 1 && p[5] == "weight") return me + "conv_out.weight";
  // convs.0: the 1x1 ConvLayer, EqualConv2d without bias then FusedLeakyReLU.
  if (p.size() == 7 && k == 0) {
    if (p[5] == "0" && p[6] == "weight") return me + "conv_in.weight";
    if (p[5] == "1" && p[6] == "bias") return me + "conv_in.act_fn.bias";
    return std::nullopt;
  }
  // convs.K (K >= 1): ResBlock K - 1: conv1 (3x3, activation), conv2 (Blur, 3x3 stride 2, activation), skip
  // (Blur, 1x1 stride 2, no bias, no activation).
  if (p.size() != 8 || k < 1) return std::nullopt;
  const std::string block = me + "res_blocks." + std::to_string(k - 1) + ".";
  const std::string& layer = p[5];
  const std::string& index = p[6];
  const std::string& leaf = p[7];
  if (layer == "conv1" && index == "0" && leaf == "weight") return block + "conv1.weight";
  if (layer == "conv1" && index == "1" && leaf == "bias") return block + "conv1.act_fn.bias";
  if (layer == "conv2" && index == "1" && leaf == "weight") return block + "conv2.weight";
  if (layer == "conv2" && index == "2" && leaf == "bias") return block + "conv2.act_fn.bias";
  if (layer == "skip" && index == "1" && leaf == "weight") return block + "conv_skip.weight";
  return std::nullopt;
}

// Wan2.2-Animate's face encoder (face_blocks.py FaceEncoder: CausalConv1d modules hold a .conv) and face adapter
// (FaceAdapter.fuser_blocks.J, a FaceBlock: linear1_kv (split, transformer_fused_kv_names), linear1_q, linear2,
// q_norm, k_norm; diffusers' face_adapter is the bare list).
std::optional<std::string> face_name(const std::vector<std::string>& p) {
  if (p[0] == "face_encoder") {
    if (p.size() == 2 && p[1] == "padding_tokens") return std::string("face_encoder.padding_tokens");
    if (p.size() == 3 && p[1] == "out_proj" && is_param(p[2])) return "face_encoder.out_proj." + p[2];
    if (p.size() == 4 && (p[1] == "conv1_local" || p[1] == "conv2" || p[1] == "conv3") && p[2] == "conv" &&
        is_param(p[3]))
      return "face_encoder." + p[1] + "." + p[3];
    return std::nullopt;
  }
  int j = 0;
  if (p.size() != 5 || p[0] != "face_adapter" || p[1] != "fuser_blocks" || !parse_index(p[2], &j)) return std::nullopt;
  const std::string out = "face_adapter." + p[2] + ".";
  if (p[3] == "linear1_q" && is_param(p[4])) return out + "to_q." + p[4];
  if (p[3] == "linear2" && is_param(p[4])) return out + "to_out." + p[4];
  if (p[3] == "q_norm" && p[4] == "weight") return out + "norm_q.weight";
  if (p[3] == "k_norm" && p[4] == "weight") return out + "norm_k.weight";
  return std::nullopt;
}

std::optional<std::string> prefixed(const std::string& prefix, const std::optional<std::string>& rest) {
  if (!rest) return std::nullopt;
  return prefix + *rest;
}

// middle.{0,1,2}.<...> -> mid_block.{resnets.0, attentions.0, resnets.1}.<...>
std::optional<std::string> vae_middle_name(const std::string& side, const std::vector<std::string>& p) {
  // p: side, "middle", K, ...
  if (p.size() < 4) return std::nullopt;
  if (p[2] == "0" || p[2] == "2")
    return prefixed(side + ".mid_block.resnets." + (p[2] == "0" ? "0." : "1."), vae_residual_name(p, 3));
  if (p[2] == "1") {
    const std::string rest = join(p, 3, p.size());
    if (rest == "norm.gamma" || rest == "to_qkv.weight" || rest == "to_qkv.bias" || rest == "proj.weight" ||
        rest == "proj.bias")
      return side + ".mid_block.attentions.0." + rest;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> transformer_name_from_original(const std::string& stored) {
  const auto p = split(stored);
  if (p.size() == 2 && p[0] == "patch_embedding" && is_param(p[1])) return stored;
  if (p.size() == 3 && is_param(p[2])) {
    if (p[0] == "text_embedding" && (p[1] == "0" || p[1] == "2"))
      return "condition_embedder.text_embedder.linear_" + std::string(p[1] == "0" ? "1." : "2.") + p[2];
    if (p[0] == "time_embedding" && (p[1] == "0" || p[1] == "2"))
      return "condition_embedder.time_embedder.linear_" + std::string(p[1] == "0" ? "1." : "2.") + p[2];
    if (p[0] == "time_projection" && p[1] == "1") return "condition_embedder.time_proj." + p[2];
    if (p[0] == "head" && p[1] == "head") return "proj_out." + p[2];
  }
  if (stored == "head.modulation") return std::string("scale_shift_table");
  // Wan2.1's image embedder (MLPProj: LayerNorm, Linear, GELU, Linear, LayerNorm; FLF2V's emb_pos).
  if (stored == "img_emb.emb_pos") return std::string("condition_embedder.image_embedder.pos_embed");
  if (p.size() == 4 && p[0] == "img_emb" && p[1] == "proj" && is_param(p[3])) {
    static const std::map<std::string, std::string> kImg = {
        {"0", "norm1"}, {"1", "ff.net.0.proj"}, {"3", "ff.net.2"}, {"4", "norm2"}};
    auto it = kImg.find(p[2]);
    if (it != kImg.end()) return "condition_embedder.image_embedder." + it->second + "." + p[3];
  }
  // VACE (Wan2.1-VACE, Wan2.2-VACE-Fun): its patch embedding keeps its name, its blocks are vace_blocks.N.
  if (p.size() == 2 && p[0] == "vace_patch_embedding" && is_param(p[1])) return stored;
  // Wan2.2-Animate (wan/modules/animate/model_animate.py WanAnimateModel): the pose latents' patch embedding keeps
  // its name; the motion encoder, the face encoder and the face adapters are renamed.
  if (p.size() == 2 && p[0] == "pose_patch_embedding" && is_param(p[1])) return stored;
  if (p[0] == "motion_encoder") return motion_encoder_name(p);
  if (p[0] == "face_encoder" || p[0] == "face_adapter") return face_name(p);
  int n = 0;
  if (p.size() >= 3 && (p[0] == "blocks" || p[0] == "vace_blocks") && parse_index(p[1], &n))
    return transformer_block_name(p[0] + ".", n, std::vector<std::string>(p.begin() + 2, p.end()));
  return std::nullopt;
}

std::vector<std::string> transformer_fused_kv_names(const std::string& stored) {
  const auto p = split(stored);
  int j = 0;
  if (p.size() != 5 || p[0] != "face_adapter" || p[1] != "fuser_blocks" || !parse_index(p[2], &j) ||
      p[3] != "linear1_kv" || !is_param(p[4]))
    return {};
  // FaceBlock views linear1_kv's output as (K H D) with K = 2 outermost: the first half of the rows is the key,
  // the second the value (diffusers' converter: torch.chunk(kv, 2, dim=0)).
  return {"face_adapter." + p[2] + ".to_k." + p[4], "face_adapter." + p[2] + ".to_v." + p[4]};
}

bool transformer_skipped(const std::string& stored) {
  // The motion encoder's Blur kernels (a persistent buffer of Wan's Blur: [4, 4], outer([1, 3, 3, 1]) / 64), in
  // each ResBlock's conv2 and skip; diffusers builds them itself (a non-persistent buffer) and its converter drops
  // them. Only these exact names: any other stored tensor is named by transformer_name_from_original or refused.
  const auto p = split(stored);
  int k = 0;
  return p.size() == 8 && p[0] == "motion_encoder" && p[1] == "enc" && p[2] == "net_app" && p[3] == "convs" &&
         parse_index(p[4], &k) && k >= 1 && (p[5] == "conv2" || p[5] == "skip") && p[6] == "0" && p[7] == "kernel";
}

bool transformer_squeezed(const std::string& ours) {
  // The motion encoder's FusedLeakyReLU biases: Wan stores [1, C, 1, 1], diffusers [C].
  return starts_with(ours, "motion_encoder.") && ends_with(ours, ".act_fn.bias");
}

std::optional<std::string> umt5_name_from_wan(const std::string& stored) {
  if (stored == "token_embedding.weight") return std::string("shared.weight");
  if (stored == "norm.weight") return std::string("encoder.final_layer_norm.weight");
  const auto p = split(stored);
  int n = 0;
  if (p.size() < 4 || p[0] != "blocks" || !parse_index(p[1], &n) || p.back() != "weight") return std::nullopt;
  const std::string block = "encoder.block." + std::to_string(n) + ".layer.";
  const std::string rest = join(p, 2, p.size() - 1);  // without ".weight"
  static const std::map<std::string, std::string> kBlock = {
      {"norm1", "0.layer_norm"},
      {"attn.q", "0.SelfAttention.q"},
      {"attn.k", "0.SelfAttention.k"},
      {"attn.v", "0.SelfAttention.v"},
      {"attn.o", "0.SelfAttention.o"},
      {"pos_embedding.embedding", "0.SelfAttention.relative_attention_bias"},
      {"norm2", "1.layer_norm"},
      {"ffn.gate.0", "1.DenseReluDense.wi_0"},
      {"ffn.fc1", "1.DenseReluDense.wi_1"},
      {"ffn.fc2", "1.DenseReluDense.wo"},
  };
  auto it = kBlock.find(rest);
  if (it == kBlock.end()) return std::nullopt;
  return block + it->second + ".weight";
}

std::optional<std::string> vae_name_from_original(const std::string& stored, const VaeNameShape& shape) {
  static const std::map<std::string, std::string> kTop = {
      {"conv1.weight", "quant_conv.weight"},
      {"conv1.bias", "quant_conv.bias"},
      {"conv2.weight", "post_quant_conv.weight"},
      {"conv2.bias", "post_quant_conv.bias"},
      {"encoder.conv1.weight", "encoder.conv_in.weight"},
      {"encoder.conv1.bias", "encoder.conv_in.bias"},
      {"decoder.conv1.weight", "decoder.conv_in.weight"},
      {"decoder.conv1.bias", "decoder.conv_in.bias"},
      {"encoder.head.0.gamma", "encoder.norm_out.gamma"},
      {"encoder.head.2.weight", "encoder.conv_out.weight"},
      {"encoder.head.2.bias", "encoder.conv_out.bias"},
      {"decoder.head.0.gamma", "decoder.norm_out.gamma"},
      {"decoder.head.2.weight", "decoder.conv_out.weight"},
      {"decoder.head.2.bias", "decoder.conv_out.bias"},
  };
  if (auto it = kTop.find(stored); it != kTop.end()) return it->second;
  const auto p = split(stored);
  if (p.size() < 4 || (p[0] != "encoder" && p[0] != "decoder")) return std::nullopt;
  const std::string& side = p[0];
  if (p[1] == "middle") return vae_middle_name(side, p);
  int k = 0;
  const int levels = shape.num_levels;
  if (side == "encoder" && p[1] == "downsamples" && parse_index(p[2], &k)) {
    if (shape.wan22) {
      // downsamples.I.downsamples.J: J < num_res_blocks a residual block, J == num_res_blocks the resample.
      int j = 0;
      if (k >= levels || p.size() < 6 || p[3] != "downsamples" || !parse_index(p[4], &j)) return std::nullopt;
      const std::string out = "encoder.down_blocks." + std::to_string(k) + ".";
      if (j < shape.num_res_blocks)
        return prefixed(out + "resnets." + std::to_string(j) + ".", vae_residual_name(p, 5));
      if (j == shape.num_res_blocks && k != levels - 1) return prefixed(out + "downsampler.", vae_resample_name(p, 5));
      return std::nullopt;
    }
    // Wan2.1: one flat list in both layouts (num_res_blocks residual blocks per level, then a resample but
    // after the last level); only the inner names change.
    const int per_level = shape.num_res_blocks + 1;
    if (k >= levels * per_level - 1) return std::nullopt;
    const std::string out = "encoder.down_blocks." + std::to_string(k) + ".";
    if (k % per_level < shape.num_res_blocks) return prefixed(out, vae_residual_name(p, 3));
    return prefixed(out, vae_resample_name(p, 3));
  }
  if (side == "decoder" && p[1] == "upsamples" && parse_index(p[2], &k)) {
    const int resnets = shape.num_res_blocks + 1;  // the decoder has one more residual block per level
    if (shape.wan22) {
      int j = 0;
      if (k >= levels || p.size() < 6 || p[3] != "upsamples" || !parse_index(p[4], &j)) return std::nullopt;
      const std::string out = "decoder.up_blocks." + std::to_string(k) + ".";
      if (j < resnets) return prefixed(out + "resnets." + std::to_string(j) + ".", vae_residual_name(p, 5));
      if (j == resnets && k != levels - 1) return prefixed(out + "upsampler.", vae_resample_name(p, 5));
      return std::nullopt;
    }
    // Wan2.1: a flat list of `resnets` residual blocks per level, then an upsampler but after the last level;
    // ours nests them: up_blocks.I.resnets.J and up_blocks.I.upsamplers.0.
    const int per_level = resnets + 1;
    const int level = k / per_level, j = k % per_level;
    if (level >= levels || (level == levels - 1 && j == resnets)) return std::nullopt;
    const std::string out = "decoder.up_blocks." + std::to_string(level) + ".";
    if (j < resnets) return prefixed(out + "resnets." + std::to_string(j) + ".", vae_residual_name(p, 3));
    return prefixed(out + "upsamplers.0.", vae_resample_name(p, 3));
  }
  return std::nullopt;
}

// CLIP's vision tower (io/wan_names.h). Per layer, our module under vision_model.encoder.layers.N for each stored
// module: Wan's (wan/modules/clip.py AttentionBlock) and open_clip's (open_clip transformer.py
// ResidualAttentionBlock), the fused q/k/v projection aside.
namespace {

const std::string kClipOurs = "vision_model.";

// The stored layer prefix ("visual.transformer.N." or "visual.transformer.resblocks.N.") and what follows it.
bool clip_layer(const std::string& stored, NameLayout layout, int* n, std::vector<std::string>* rest) {
  const std::string head = layout == NameLayout::kOpenClip ? "visual.transformer.resblocks." : "visual.transformer.";
  if (!starts_with(stored, head)) return false;
  const auto p = split(stored.substr(head.size()));
  if (p.size() < 2 || !parse_index(p[0], n)) return false;
  rest->assign(p.begin() + 1, p.end());
  return true;
}

std::string clip_layer_ours(int n) {
  return kClipOurs + "encoder.layers." + std::to_string(n) + ".";
}

}  // namespace

std::optional<std::string> clip_name_from_original(const std::string& stored, NameLayout layout) {
  const bool oc = layout == NameLayout::kOpenClip;
  // The embeddings and the two norms around the layers.
  static const std::map<std::string, std::string> kWan = {
      {"visual.patch_embedding.weight", "embeddings.patch_embedding.weight"},
      {"visual.cls_embedding", "embeddings.class_embedding"},
      {"visual.pos_embedding", "embeddings.position_embedding.weight"},
      {"visual.pre_norm.weight", "pre_layrnorm.weight"},
      {"visual.pre_norm.bias", "pre_layrnorm.bias"},
      {"visual.post_norm.weight", "post_layernorm.weight"},
      {"visual.post_norm.bias", "post_layernorm.bias"}};
  static const std::map<std::string, std::string> kOpenClipTop = {
      {"visual.conv1.weight", "embeddings.patch_embedding.weight"},
      {"visual.class_embedding", "embeddings.class_embedding"},
      {"visual.positional_embedding", "embeddings.position_embedding.weight"},
      {"visual.ln_pre.weight", "pre_layrnorm.weight"},
      {"visual.ln_pre.bias", "pre_layrnorm.bias"},
      {"visual.ln_post.weight", "post_layernorm.weight"},
      {"visual.ln_post.bias", "post_layernorm.bias"}};
  const auto& top = oc ? kOpenClipTop : kWan;
  if (auto it = top.find(stored); it != top.end()) return kClipOurs + it->second;
  int n = 0;
  std::vector<std::string> p;
  if (!clip_layer(stored, layout, &n, &p) || !is_param(p.back())) return std::nullopt;
  static const std::map<std::string, std::string> kWanLayer = {{"norm1", "layer_norm1"},
                                                               {"norm2", "layer_norm2"},
                                                               {"attn.proj", "self_attn.out_proj"},
                                                               {"mlp.0", "mlp.fc1"},
                                                               {"mlp.2", "mlp.fc2"}};
  static const std::map<std::string, std::string> kOpenClipLayer = {{"ln_1", "layer_norm1"},
                                                                    {"ln_2", "layer_norm2"},
                                                                    {"attn.out_proj", "self_attn.out_proj"},
                                                                    {"mlp.c_fc", "mlp.fc1"},
                                                                    {"mlp.c_proj", "mlp.fc2"}};
  const auto& layer = oc ? kOpenClipLayer : kWanLayer;
  auto it = layer.find(join(p, 0, p.size() - 1));
  if (it == layer.end()) return std::nullopt;
  return clip_layer_ours(n) + it->second + "." + p.back();
}

std::vector<std::string> clip_fused_qkv_names(const std::string& stored, NameLayout layout) {
  int n = 0;
  std::vector<std::string> p;
  if (!clip_layer(stored, layout, &n, &p)) return {};
  std::string param;  // weight or bias
  if (layout == NameLayout::kOpenClip && p.size() == 2 && p[0] == "attn" && starts_with(p[1], "in_proj_"))
    param = p[1].substr(std::string("in_proj_").size());
  if (layout == NameLayout::kWanOriginal && p.size() == 3 && p[0] == "attn" && p[1] == "to_qkv") param = p[2];
  if (!is_param(param)) return {};
  std::vector<std::string> out;
  for (const char* proj : {"q_proj.", "k_proj.", "v_proj."})
    out.push_back(clip_layer_ours(n) + "self_attn." + proj + param);
  return out;
}

bool clip_skipped(const std::string& stored) {
  // Everything outside the vision tower (Wan's textual.* and log_scale; open_clip's text transformer,
  // token_embedding, ln_final, text_projection, logit_scale), and the tower's projection head (Wan's visual.head,
  // open_clip's visual.proj: [D, out], the transpose of visual_projection.weight), which hidden_states[-2] never
  // uses.
  return !starts_with(stored, "visual.") || stored == "visual.head" || stored == "visual.proj";
}

bool clip_squeezed(const std::string& ours) {
  // Wan stores the class token as [1, 1, D] and the position table as [1, N, D].
  return ours == kClipOurs + "embeddings.class_embedding" || ours == kClipOurs + "embeddings.position_embedding.weight";
}

namespace {

bool any_named(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool any_starting(const std::vector<std::string>& names, const std::string& prefix) {
  return std::any_of(names.begin(), names.end(), [&](const std::string& n) { return starts_with(n, prefix); });
}

}  // namespace

std::optional<NameLayout> transformer_name_layout(const std::vector<std::string>& names) {
  if (any_named(names, "head.modulation")) return NameLayout::kWanOriginal;
  if (any_named(names, "scale_shift_table") || any_named(names, "proj_out.weight")) return NameLayout::kOurs;
  return std::nullopt;
}

std::optional<NameLayout> umt5_name_layout(const std::vector<std::string>& names) {
  if (any_named(names, "token_embedding.weight") || any_starting(names, "blocks.0.attn."))
    return NameLayout::kWanOriginal;
  if (any_starting(names, "encoder.block.")) return NameLayout::kOurs;
  return std::nullopt;
}

std::optional<NameLayout> vae_name_layout(const std::vector<std::string>& names) {
  if (any_starting(names, "decoder.middle.")) return NameLayout::kWanOriginal;
  if (any_starting(names, "decoder.mid_block.")) return NameLayout::kOurs;
  return std::nullopt;
}

std::optional<NameLayout> clip_name_layout(const std::vector<std::string>& names) {
  if (any_named(names, "visual.transformer.resblocks.0.attn.in_proj_weight")) return NameLayout::kOpenClip;
  if (any_named(names, "visual.transformer.0.attn.to_qkv.weight")) return NameLayout::kWanOriginal;
  if (any_named(names, "vision_model.pre_layrnorm.weight") || any_named(names, "pre_layrnorm.weight"))
    return NameLayout::kOurs;
  return std::nullopt;
}

bool vae_original_is_wan22(const std::vector<std::string>& names) {
  return any_starting(names, "encoder.downsamples.0.downsamples.");
}

}  // namespace omni::io
