// transformers' CLIPVisionModel, the image encoder of Wan2.1's image-to-video and first-last-frame models (and
// of Wan2.2-Animate): diffusers' WanImageToVideoPipeline.encode_image feeds it CLIPImageProcessor's pixels and
// keeps hidden_states[-2], the output of the penultimate layer (the original Wan code's use_31_block).
//
// Module tree (paths are the checkpoint's tensor names, transformers' CLIPVisionModel):
//   vision_model.embeddings.class_embedding          [D]                       } root unit
//   vision_model.embeddings.patch_embedding.weight   [D, C, P, P] (no bias)     }
//   vision_model.embeddings.position_embedding.weight [1 + (S/P)^2, D]          }
//   vision_model.pre_layrnorm.{weight,bias}          [D] (transformers' spelling)}
//   vision_model.post_layernorm.{weight,bias}        [D] (loaded, never used)   }
//   vision_model.encoder.layers.<i>.*                ClipEncoderLayer              unit i
// transformers 4 wrote these names (the published Wan2.1 image_encoder folders; ComfyUI's clip_vision_h); a
// CLIPVisionModel saved by transformers 5 has them without "vision_model." (embeddings.*, encoder.layers.*,
// pre_layrnorm.*): both are read. Tensors a checkpoint may carry besides, claimed and never used:
// <prefix>embeddings.position_ids (a buffer transformers before 4.31 saved) and visual_projection.weight
// (CLIPVisionModelWithProjection, as in clip_vision_h.safetensors).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "models/clip_encoder_layer.h"
#include "models/module.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

struct ClipVisionConfig {
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_attention_heads = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_channels = 3;
  int64_t image_size = 224;
  int64_t patch_size = 32;
  double layer_norm_eps = 1e-5;
  ClipActivation hidden_act = ClipActivation::kQuickGelu;
  int64_t projection_dim = 0;  // visual_projection's output width when the checkpoint has one (0: none)
  // The checkpoint's naming and extra tensors (header comment); set by resolve_names().
  std::string prefix = "vision_model.";  // or "" (transformers 5)
  bool has_position_ids = false;
  bool has_visual_projection = false;

  int64_t num_positions() const {
    const int64_t side = image_size / patch_size;
    return side * side + 1;
  }

  // image_encoder/config.json (a CLIPVisionConfig, or a CLIPConfig whose vision_config is read). A missing or
  // non-positive size, a width the heads do not divide, or an activation other than gelu / quick_gelu is an
  // input error naming the file and the key.
  static ClipVisionConfig from_json(const std::string& path);
  static ClipVisionConfig from_json(const nlohmann::json& j, const std::string& source);
  // Reads the naming (prefix) from `ckpt` and notes which of the extra tensors it holds. A checkpoint with
  // neither layout's pre_layrnorm.weight is an input error naming the file.
  void resolve_names(const io::Checkpoint& ckpt);
};

class ClipVisionModel : public Module {
 public:
  // `dtype`: compute dtype (float32, bfloat16 or float16).
  ClipVisionModel(const ClipVisionConfig& config, at::ScalarType dtype);

  // Reads <image_encoder_dir>/config.json and the checkpoint there and loads every tensor.
  static std::unique_ptr<ClipVisionModel> load(const std::string& image_encoder_dir, at::ScalarType dtype,
                                               const at::Device& device = at::kCPU);

  // pixel_values [B, C, S, S] (CLIPImageProcessor's output, any floating dtype; cast to the model's) ->
  // transformers' hidden_states[index] [B, 1 + (S/P)^2, D] in the compute dtype: index 0 is the embeddings
  // after pre_layrnorm, index i the output of layer i - 1; only the layers needed run. hooks->before/after
  // (UnitHooks::kRootUnit) bracket the forward and before/after(i) each layer that runs (module.h).
  at::Tensor hidden_state(const at::Tensor& pixel_values, int64_t index, UnitHooks* hooks = nullptr) const;
  // hidden_states[-2], what the Wan pipelines condition on.
  at::Tensor penultimate_hidden_state(const at::Tensor& pixel_values, UnitHooks* hooks = nullptr) const {
    return hidden_state(pixel_values, config_.num_hidden_layers - 1, hooks);
  }

  const ClipVisionConfig& config() const { return config_; }
  at::ScalarType dtype() const { return dtype_; }
  int num_blocks() const { return static_cast<int>(layers_.size()); }
  const Module& block(int i) const;
  // "<prefix>encoder.layers.<i>.": prefix of layer i's parameter names in the checkpoint.
  std::string block_prefix(int i) const;
  // The root unit's parameters (embeddings, layer norms, extras), full names.
  std::vector<ParamRef> root_parameters() const;

 private:
  ClipVisionConfig config_;
  at::ScalarType dtype_;
  at::Tensor& class_embedding_;
  at::Tensor& patch_embedding_;
  at::Tensor& position_embedding_;
  at::Tensor& pre_norm_weight_;
  at::Tensor& pre_norm_bias_;
  std::vector<ClipEncoderLayer*> layers_;
};

}  // namespace omni::models
