// LoRA adapters merged into a model's weights as they are read (the path HSDP loads through), so that a
// sharded rank merges only into its own slice and the forward is the plain model's (docs/DESIGN.md section 8).
//
// Formats, told apart per key (a file may mix them):
//   diffusers / PEFT   transformer.blocks.N.attn1.to_q.lora_A.weight, .lora_B.weight, .lora_B.bias, .alpha
//   Wan (original)     diffusion_model.blocks.N.self_attn.q.lora_down.weight / lora_up / lora_A / lora_B,
//                      .alpha, .diff (a full weight delta), .diff_b (a full bias delta)
//   Kijai              diffusion_model.blocks.N.diff_m: a full delta of the block's modulation table (our
//                      blocks.N.scale_shift_table, [1, 6, dim]; a [6, dim] delta fits too)
//   lightx2v           diffusion_model.head.head.diff / .diff_b: full deltas of proj_out.weight / proj_out.bias
//   Kohya / musubi     lora_unet_blocks_N_self_attn_q.lora_down.weight, .lora_up.weight, .alpha
//   PEFT on Wan        base_model.model.blocks.N.cross_attn.k_img.lora_A.weight / .lora_B.weight (peft's
//                      get_peft_model_state_dict of Wan's own model; no alpha: scale 1 = lora_alpha / r as Wan's
//                      LoraConfig has it): Wan2.2-Animate-14B's relighting_lora.ckpt, a torch.save
//                      {"state_dict": {...}} archive (io/pth_file.h reads it; nothing from it is run), whose
//                      targets are every Linear of the blocks (self / cross attention q, k, v, o, k_img, v_img; ffn)
// The file is a .safetensors or a torch.save archive (.ckpt, .pth, .pt, .bin).
// The prefix may be model.diffusion_model., diffusion_model., transformer., base_model.model. or none
// (blocks.N.self_attn.q.lora_down.weight); without one, our names are tried first, then Wan's.
// Module names are ours (the checkpoint's) or the original Wan ones (self_attn.q, cross_attn.o, ffn.0, ffn.2,
// norm3, modulation, text_embedding.0, time_embedding.2, time_projection.1, head.head, img_emb.proj.1, ...).
// Wan2.2-S2V's checkpoint names are Wan's: there the other naming is diffusers' (diffusers_module_name).
//
// Wan2.1 I2V LoRAs used on Wan2.2 name image-conditioning modules Wan2.2 lacks: cross_attn.k_img / v_img /
// norm_k_img and img_emb.* (diffusers: attn2.add_k_proj / add_v_proj / norm_added_k,
// condition_embedder.image_embedder.*). When the model has no such module their keys are skipped with one
// warning per file (as diffusers does), or are an input error when `strict` (--lora-strict).
//
// The update of a weight W is W += scale * (alpha / rank) * B @ A (alpha absent: alpha = rank), of a bias
// b += scale * diff_b, and a full delta W += scale * diff; every update of a parameter is added in float32
// and the sum rounded once to the parameter's dtype.
#pragma once

#include <ATen/ATen.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/lora_source.h"
#include "models/module.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

// What a run records of one file (the sidecar, the MP4 metadata); the SHA-256 is the caller's.
struct LoraFileSummary {
  std::string path;
  double scale = 1.0;
  int modules = 0;  // model modules it updates
};

class LoraSet {
 public:
  // Opens every file of `sources` and resolves each of its tensors against `params` (a model's parameters
  // under their checkpoint names); `flag` ("--lora", "--lora-2") and `component` ("transformer") name them in
  // errors. Input errors (exit 3), one line naming the file and the key: a file that updates no module of the
  // model, a key that names no module (with the closest names), a shape that does not fit (and which model
  // the file is for, when its sizes say so), A and B of different ranks, an A without its B, and with `strict`
  // a key of a Wan2.1 image-conditioning module the model lacks (otherwise skipped with one warning per file).
  // Only headers and the small alpha scalars are read here; the update tensors are read when merged.
  LoraSet(const std::vector<LoraSource>& sources, const std::vector<ParamRef>& params, const std::string& flag,
          const std::string& component, bool strict = false);
  ~LoraSet();
  LoraSet(LoraSet&&) noexcept;

  bool empty() const { return updates_.empty(); }
  bool touches(const std::string& param) const { return updates_.count(param) != 0; }
  const std::vector<LoraFileSummary>& files() const { return files_; }

  // Adds every update of parameter `param` to `values`: float32, 1-D, holding the parameter's flattened
  // elements [begin, begin + values.numel()). Reads only the rows of each B (and diff) that cover that range,
  // and each A whole.
  void add_to(const std::string& param, int64_t begin, at::Tensor& values) const;

 private:
  struct Update {
    const io::Checkpoint* file;
    std::string down, up;  // low rank: A [rank, in...], B [out, rank, 1...]; empty for a full delta
    std::string full;      // a full delta of the parameter's shape (diff, diff_b, lora_B.bias)
    double factor;         // scale * alpha / rank, or scale for a full delta
  };
  std::vector<std::unique_ptr<io::Checkpoint>> checkpoints_;
  std::vector<LoraFileSummary> files_;
  std::map<std::string, std::vector<Update>> updates_;  // by parameter name, in the order of `sources`
  std::map<std::string, std::vector<int64_t>> shapes_;  // of the updated parameters
};

// The file a --lora argument names: `path` itself (.safetensors, or a torch.save archive such as Wan2.2-Animate's
// relighting_lora.ckpt), or pytorch_lora_weights.safetensors in the folder `path` (what diffusers'
// save_lora_weights writes). An input error naming `flag` when neither exists.
std::string lora_file_path(const std::string& path, const std::string& flag);

// The original Wan name of one of our module paths ("blocks.3.attn1.to_q" -> "blocks.3.self_attn.q"), or ""
// when the original model has no such module.
std::string wan_original_module_name(const std::string& module);

// The diffusers name of an original Wan module path ("blocks.3.self_attn.q" -> "blocks.3.attn1.to_q",
// "head.head" -> "proj_out"), or "" when diffusers has no such module: the names a diffusers LoRA gives the
// modules of Wan2.2-S2V, whose checkpoint keeps Wan's names.
std::string diffusers_module_name(const std::string& module);

}  // namespace omni::models
