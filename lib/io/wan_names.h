// The name tables from the layouts people have Wan2.2 weights in to ours (the diffusers / transformers module
// paths our modules mirror). One function per model: given a stored tensor name, our name, or nothing when the
// name is not a tensor of that model (the loader then refuses the file, naming the tensor).
//
//   transformer  Wan2.2's original WanModel names (wan/modules/model.py; the Wan-AI repositories' high_noise_model/,
//                low_noise_model/, TI2V-5B's root) and ComfyUI's single files (the same names, bare or under
//                model.diffusion_model.); diffusers' convert_wan_transformer_to_diffusers is the reference. Mind the
//                swap: the original cross-attention norm is norm3, ours (diffusers') norm2. Wan2.2-Animate's
//                WanAnimateModel (wan/modules/animate/model_animate.py; ComfyUI's comfy/ldm/wan/model_animate.py
//                keeps its names) adds pose_patch_embedding, the motion encoder (enc.net_app.convs, enc.fc,
//                dec.direction), the face encoder and the face adapters (fuser_blocks.J), renamed as diffusers'
//                scripts/convert_wan_to_diffusers.py converts them: the fused key/value projection linear1_kv is
//                split in halves (NameMap::split), the motion encoder's [1, C, 1, 1] activation biases are read as
//                [C] and its Blur kernel buffers are skipped.
//   text encoder Wan's own T5 encoder (wan/modules/t5.py; models_t5_umt5-xxl-enc-bf16.pth) to transformers' UMT5
//                names; ComfyUI's umt5_xxl files already use transformers' names.
//   vae          the original VAE names of Wan2.1_VAE.pth (wan/modules/vae2_1.py, flat down/upsample lists) and
//                Wan2.2_VAE.pth (vae2_2.py, nested per resolution) to AutoencoderKLWan's; diffusers'
//                convert_wan_vae_to_diffusers is the reference for 2.1 (whose table is written out for
//                num_res_blocks 2; the walk here follows the module structure for any).
//   CLIP         the vision tower of Wan's own CLIP (wan/modules/clip.py XLMRobertaCLIP.visual; Wan2.1's
//                models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth) and of open_clip's checkpoints
//                (open_clip_pytorch_model.bin / open_clip_model.safetensors of laion's ViT-H-14) to transformers'
//                CLIPVisionModel (vision_model.*). Both fuse q/k/v into one projection (q, k, v blocks of rows, the
//                order of nn.MultiheadAttention and of Wan's view(b, s, 3, n, d)); the checkpoint lists its blocks
//                under our three names (NameMap::split). The text tower and the projection head are skipped.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace omni::io {

// Which names a file's tensors carry, told from the names themselves.
enum class NameLayout {
  kOurs,         // diffusers / transformers names: read as they are
  kWanOriginal,  // Wan2.2's original names (transformer, T5, VAE, CLIP), any ComfyUI prefix stripped
  kOpenClip,     // open_clip's names (a CLIP image encoder)
};

// The prefix ComfyUI puts before the transformer's names in its single files.
inline constexpr const char* kComfyTransformerPrefix = "model.diffusion_model.";

// Transformer: stored name (any ComfyUI prefix already stripped) -> ours.
std::optional<std::string> transformer_name_from_original(const std::string& stored);

// Wan2.2-Animate's one-to-many and reshaped tensors (NameMap's hooks): a face adapter's fused key/value projection
// (face_adapter.fuser_blocks.J.linear1_kv.{weight,bias}) -> our to_k and to_v, key rows first (empty for any other
// tensor); the motion encoder's Blur kernel buffers, which are not weights; our motion-encoder activation biases,
// stored [1, C, 1, 1].
std::vector<std::string> transformer_fused_kv_names(const std::string& stored);
bool transformer_skipped(const std::string& stored);
bool transformer_squeezed(const std::string& ours);

// Text encoder: Wan's T5 name -> transformers' UMT5EncoderModel name.
std::optional<std::string> umt5_name_from_wan(const std::string& stored);

// VAE: what the original names' flat indices mean, from the VAE's configuration.
struct VaeNameShape {
  bool wan22 = false;  // Wan2.2 VAE (nested Down_/Up_ResidualBlock) rather than Wan2.1 (flat lists)
  int num_levels = 4;  // len(dim_mult)
  int num_res_blocks = 2;
};
std::optional<std::string> vae_name_from_original(const std::string& stored, const VaeNameShape& shape);

// CLIP image encoder, `layout` kWanOriginal or kOpenClip: stored name -> ours (nothing for the fused q/k/v, the
// skipped tensors and unknown names); the fused q/k/v's three names, q k v (empty for any other tensor); the stored
// tensors that are not the vision tower's used modules; our names stored with leading unit dims (Wan's).
std::optional<std::string> clip_name_from_original(const std::string& stored, NameLayout layout);
std::vector<std::string> clip_fused_qkv_names(const std::string& stored, NameLayout layout);
bool clip_skipped(const std::string& stored);
bool clip_squeezed(const std::string& ours);

// Which layout a set of stored names is in, for each model (nullopt: neither, e.g. an unrelated file). `names`
// have any ComfyUI prefix stripped.
std::optional<NameLayout> transformer_name_layout(const std::vector<std::string>& names);
std::optional<NameLayout> umt5_name_layout(const std::vector<std::string>& names);
std::optional<NameLayout> vae_name_layout(const std::vector<std::string>& names);
std::optional<NameLayout> clip_name_layout(const std::vector<std::string>& names);
// True when a VAE file in original names is the Wan2.2 VAE (its encoder's blocks are nested).
bool vae_original_is_wan22(const std::vector<std::string>& names);

}  // namespace omni::io
