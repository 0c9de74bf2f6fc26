#include "models/clip_vision_model.h"

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {

const char* const kLayers = "encoder.layers.";
const char* const kPositionIds = "embeddings.position_ids";
const char* const kPreNorm = "pre_layrnorm.weight";
const char* const kVisualProjection = "visual_projection.weight";

}  // namespace

ClipVisionConfig ClipVisionConfig::from_json(const std::string& path) {
  return from_json(io::read_json(path), path);
}

ClipVisionConfig ClipVisionConfig::from_json(const nlohmann::json& j, const std::string& source) {
  // A CLIPConfig (text and vision towers) carries the vision tower's settings under vision_config.
  if (j.is_object() && j.contains("vision_config") && j["vision_config"].is_object()) {
    return from_json(j["vision_config"], source + " (vision_config)");
  }
  io::ConfigFile file(j, source, "CLIPVisionModel");
  ClipVisionConfig c;
  c.hidden_size = file.positive_int("hidden_size");
  c.intermediate_size = file.positive_int("intermediate_size");
  c.num_attention_heads = file.positive_int("num_attention_heads");
  c.num_hidden_layers = file.positive_int("num_hidden_layers");
  c.num_channels = file.positive_int_or("num_channels", 3);
  c.image_size = file.positive_int_or("image_size", 224);
  c.patch_size = file.positive_int_or("patch_size", 32);
  c.projection_dim = file.int_or("projection_dim", 0);
  c.layer_norm_eps = file.number_or("layer_norm_eps", 1e-5);
  OMNI_CHECK_INPUT(c.layer_norm_eps > 0, source, ": 'layer_norm_eps' must be positive");
  const std::string act = file.string_or("hidden_act", "quick_gelu");
  OMNI_CHECK_INPUT(act == "gelu" || act == "quick_gelu", source, ": 'hidden_act' is '", act,
                   "', expected 'gelu' or 'quick_gelu'");
  c.hidden_act = act == "gelu" ? ClipActivation::kGelu : ClipActivation::kQuickGelu;
  OMNI_CHECK_INPUT(c.hidden_size % c.num_attention_heads == 0, source, ": 'hidden_size' (", c.hidden_size,
                   ") is not a multiple of 'num_attention_heads' (", c.num_attention_heads, ")");
  OMNI_CHECK_INPUT(c.image_size % c.patch_size == 0, source, ": 'image_size' (", c.image_size,
                   ") is not a multiple of 'patch_size' (", c.patch_size, ")");
  file.check_saved_dtype();
  // Training and bookkeeping keys of CLIPVisionConfig / PretrainedConfig that do not change the output.
  file.known({"attention_dropout", "dropout", "initializer_range", "initializer_factor", "architectures", "model_type",
              "transformers_version", "layer_norm_epsilon"});
  file.warn_unknown();
  return c;
}

void ClipVisionConfig::resolve_names(const io::Checkpoint& ckpt) {
  const std::string tower = "vision_model.";
  if (ckpt.contains(tower + kPreNorm)) {
    prefix = tower;
  } else {
    OMNI_CHECK_INPUT(ckpt.contains(kPreNorm), ckpt.path(), ": not a CLIP vision model: neither '", tower, kPreNorm,
                     "' (transformers 4) nor '", kPreNorm, "' (transformers 5) is in it");
    prefix.clear();
  }
  has_position_ids = ckpt.contains(prefix + kPositionIds);
  has_visual_projection = ckpt.contains(kVisualProjection);
  OMNI_CHECK_INPUT(!has_visual_projection || projection_dim > 0, ckpt.path(), ": holds '", kVisualProjection,
                   "' but the config has no 'projection_dim'");
}

ClipVisionModel::ClipVisionModel(const ClipVisionConfig& config, at::ScalarType dtype)
    : config_(config),
      dtype_(dtype),
      class_embedding_(param(config.prefix + "embeddings.class_embedding", {config.hidden_size})),
      patch_embedding_(param(config.prefix + "embeddings.patch_embedding.weight",
                             {config.hidden_size, config.num_channels, config.patch_size, config.patch_size})),
      position_embedding_(
          param(config.prefix + "embeddings.position_embedding.weight", {config.num_positions(), config.hidden_size})),
      pre_norm_weight_(param(config.prefix + kPreNorm, {config.hidden_size})),
      pre_norm_bias_(param(config.prefix + "pre_layrnorm.bias", {config.hidden_size})) {
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
                   "CLIP image encoder: unsupported dtype ", at::toString(dtype), " (float32, bfloat16 or float16)");
  OMNI_CHECK(config.num_hidden_layers > 0 && config.hidden_size > 0, "CLIP vision config not initialized");
  // Claimed so that loading accepts what transformers saves; hidden_states[-2] never reads them.
  param(config.prefix + "post_layernorm.weight", {config.hidden_size});
  param(config.prefix + "post_layernorm.bias", {config.hidden_size});
  if (config.has_position_ids) param(config.prefix + kPositionIds, {1, config.num_positions()});
  if (config.has_visual_projection) param(kVisualProjection, {config.projection_dim, config.hidden_size});
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers_.push_back(child(config.prefix + kLayers + std::to_string(i), std::make_unique<ClipEncoderLayer>(config)));
  }
}

std::unique_ptr<ClipVisionModel> ClipVisionModel::load(const std::string& image_encoder_dir, at::ScalarType dtype,
                                                       const at::Device& device) {
  auto config = ClipVisionConfig::from_json(image_encoder_dir + "/config.json");
  const auto ckpt = io::Checkpoint::open(image_encoder_dir);
  config.resolve_names(ckpt);
  auto model = std::make_unique<ClipVisionModel>(config, dtype);
  load_state(*model, ckpt, dtype, device);
  return model;
}

const Module& ClipVisionModel::block(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "CLIP layer index ", i, " out of range [0, ", num_blocks(), ")");
  return *layers_[i];
}

std::string ClipVisionModel::block_prefix(int i) const {
  return config_.prefix + kLayers + std::to_string(i) + ".";
}

std::vector<ParamRef> ClipVisionModel::root_parameters() const {
  return parameters_except({config_.prefix + kLayers});
}

at::Tensor ClipVisionModel::hidden_state(const at::Tensor& pixel_values, int64_t index, UnitHooks* hooks) const {
  const auto& c = config_;
  OMNI_CHECK(pixel_values.dim() == 4 && pixel_values.size(1) == c.num_channels &&
                 pixel_values.size(2) == c.image_size && pixel_values.size(3) == c.image_size,
             "CLIP image encoder: pixel_values must be [B, ", c.num_channels, ", ", c.image_size, ", ", c.image_size,
             "], got ", shape_str(pixel_values.sizes()));
  OMNI_CHECK(index >= 0 && index <= c.num_hidden_layers, "CLIP hidden state index ", index, " out of range [0, ",
             c.num_hidden_layers, "]");
  if (hooks) hooks->before(UnitHooks::kRootUnit);
  // CLIPVisionEmbeddings: a stride-P convolution without bias -> [B, D, S/P, S/P] -> [B, (S/P)^2, D]; the
  // class token in front; the learned position table added.
  const auto pixels = pixel_values.to(patch_embedding_.device(), patch_embedding_.scalar_type());
  auto patches = at::conv2d(pixels, patch_embedding_, /*bias=*/{}, {c.patch_size, c.patch_size});
  patches = patches.flatten(2).transpose(1, 2);  // [B, N, D]
  const int64_t batch = patches.size(0);
  const auto cls = class_embedding_.view({1, 1, c.hidden_size}).expand({batch, 1, c.hidden_size});  // [B, 1, D]
  auto hidden = at::cat({cls, patches}, 1) + position_embedding_.unsqueeze(0);                      // [B, 1+N, D]
  hidden = at::layer_norm(hidden, {c.hidden_size}, pre_norm_weight_, pre_norm_bias_, c.layer_norm_eps);
  for (int i = 0; i < index; ++i) {
    if (hooks) hooks->before(i);
    hidden = layers_[i]->forward(hidden);
    if (hooks) hooks->after(i);
  }
  // The layers after `index` do not run: HSDP drains the gather it may have started for the next one.
  if (hooks && index < num_blocks()) hooks->skip(static_cast<int>(index));
  if (hooks) hooks->after(UnitHooks::kRootUnit);
  return hidden;
}

}  // namespace omni::models
