#include "models/wav2vec2_model.h"

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {

const char* const kLayers = "encoder.layers.";
const char* const kEncoderNorm = "encoder.layer_norm.weight";
const char* const kPosConv = "encoder.pos_conv_embed.conv.";

// A list of positive integers under `key` (conv_dim, conv_kernel, conv_stride).
std::vector<int64_t> positive_list(io::ConfigFile& file, const char* key) {
  const nlohmann::json* v = file.value(key);
  OMNI_CHECK_INPUT(v && v->is_array() && !v->empty(), file.source(), ": '", key, "' must be a list of integers");
  std::vector<int64_t> out;
  for (const auto& e : *v) {
    OMNI_CHECK_INPUT(e.is_number_integer() && e.get<int64_t>() > 0, file.source(), ": '", key,
                     "' must hold positive integers, got ", e.dump());
    out.push_back(e.get<int64_t>());
  }
  return out;
}

}  // namespace

int64_t Wav2Vec2Config::frames_for(int64_t samples) const {
  int64_t n = samples;
  for (size_t i = 0; i < conv_kernel.size(); ++i)
    n = n < conv_kernel[i] ? 0 : (n - conv_kernel[i]) / conv_stride[i] + 1;
  return n;
}

Wav2Vec2Config Wav2Vec2Config::from_json(const std::string& path) {
  return from_json(io::read_json(path), path);
}

Wav2Vec2Config Wav2Vec2Config::from_json(const nlohmann::json& j, const std::string& source) {
  io::ConfigFile file(j, source, "transformers' Wav2Vec2Model");
  const std::string& path = source;
  Wav2Vec2Config c;
  c.hidden_size = file.positive_int("hidden_size");
  c.intermediate_size = file.positive_int("intermediate_size");
  c.num_attention_heads = file.positive_int("num_attention_heads");
  c.num_hidden_layers = file.positive_int("num_hidden_layers");
  c.conv_dim = positive_list(file, "conv_dim");
  c.conv_kernel = positive_list(file, "conv_kernel");
  c.conv_stride = positive_list(file, "conv_stride");
  OMNI_CHECK_INPUT(c.conv_dim.size() == c.conv_kernel.size() && c.conv_dim.size() == c.conv_stride.size(), path,
                   ": 'conv_dim', 'conv_kernel' and 'conv_stride' have ", c.conv_dim.size(), ", ", c.conv_kernel.size(),
                   " and ", c.conv_stride.size(), " entries; they must be equal");
  c.conv_bias = file.bool_or("conv_bias", false);
  c.num_conv_pos_embeddings = file.positive_int_or("num_conv_pos_embeddings", 128);
  c.num_conv_pos_embedding_groups = file.positive_int_or("num_conv_pos_embedding_groups", 16);
  c.layer_norm_eps = file.number_or("layer_norm_eps", 1e-5);
  c.vocab_size = file.int_or("vocab_size", 32);
  OMNI_CHECK_INPUT(c.layer_norm_eps > 0, path, ": 'layer_norm_eps' must be positive");
  OMNI_CHECK_INPUT(c.hidden_size % c.num_attention_heads == 0, path, ": 'hidden_size' (", c.hidden_size,
                   ") is not a multiple of 'num_attention_heads' (", c.num_attention_heads, ")");
  OMNI_CHECK_INPUT(c.hidden_size % c.num_conv_pos_embedding_groups == 0, path, ": 'hidden_size' (", c.hidden_size,
                   ") is not a multiple of 'num_conv_pos_embedding_groups' (", c.num_conv_pos_embedding_groups, ")");
  // What wav2vec2-large-xlsr-53 (and every "large" wav2vec2) uses; the base models' group norm and post-norm
  // layers are another model, not built here.
  const std::string norm = file.string_or("feat_extract_norm", "group");
  OMNI_CHECK_INPUT(norm == "layer", path, ": 'feat_extract_norm' is '", norm,
                   "'; only 'layer' (wav2vec2-large, as Wan2.2-S2V's wav2vec2-large-xlsr-53-english) is supported");
  OMNI_CHECK_INPUT(file.bool_or("do_stable_layer_norm", false), path,
                   ": 'do_stable_layer_norm' is false; only the pre-norm layers of wav2vec2-large are supported");
  for (const char* key : {"hidden_act", "feat_extract_activation"}) {
    const std::string act = file.string_or(key, "gelu");
    OMNI_CHECK_INPUT(act == "gelu", path, ": '", key, "' is '", act, "', expected 'gelu'");
  }
  file.check_saved_dtype();
  // Training, CTC decoding and bookkeeping keys that do not change the hidden states.
  file.known({"activation_dropout",
              "apply_spec_augment",
              "attention_dropout",
              "bos_token_id",
              "codevector_dim",
              "contrastive_logits_temperature",
              "ctc_loss_reduction",
              "ctc_zero_infinity",
              "diversity_loss_weight",
              "eos_token_id",
              "feat_extract_dropout",
              "feat_proj_dropout",
              "feat_quantizer_dropout",
              "final_dropout",
              "gradient_checkpointing",
              "hidden_dropout",
              "hidden_dropout_prob",
              "initializer_range",
              "layerdrop",
              "mask_channel_length",
              "mask_channel_min_space",
              "mask_channel_other",
              "mask_channel_prob",
              "mask_channel_selection",
              "mask_feature_length",
              "mask_feature_min_masks",
              "mask_feature_prob",
              "mask_time_length",
              "mask_time_min_masks",
              "mask_time_min_space",
              "mask_time_other",
              "mask_time_prob",
              "mask_time_selection",
              "num_codevector_groups",
              "num_codevectors_per_group",
              "num_negatives",
              "pad_token_id",
              "proj_codevector_dim",
              "architectures",
              "model_type",
              "transformers_version",
              "add_adapter",
              "adapter_kernel_size",
              "adapter_stride",
              "num_adapter_layers",
              "output_hidden_size",
              "adapter_attn_dim",
              "classifier_proj_size",
              "tdnn_dim",
              "tdnn_kernel",
              "tdnn_dilation",
              "xvector_output_dim",
              "use_weighted_layer_sum",
              "feat_quantizer_dropout",
              "num_feat_extract_layers",
              "do_stable_layer_norm",
              "feat_extract_norm",
              "hidden_act",
              "feat_extract_activation"});
  file.warn_unknown();
  return c;
}

void Wav2Vec2Config::resolve_names(const io::Checkpoint& ckpt) {
  const std::string ctc = "wav2vec2.";
  if (ckpt.contains(ctc + kEncoderNorm)) {
    prefix = ctc;
  } else {
    OMNI_CHECK_INPUT(ckpt.contains(kEncoderNorm), ckpt.path(), ": not a wav2vec2 model: neither '", ctc, kEncoderNorm,
                     "' (Wav2Vec2ForCTC) nor '", kEncoderNorm, "' (Wav2Vec2Model) is in it");
    prefix.clear();
  }
  legacy_weight_norm = ckpt.contains(prefix + kPosConv + "weight_g");
  OMNI_CHECK_INPUT(legacy_weight_norm || ckpt.contains(prefix + kPosConv + "parametrizations.weight.original0"),
                   ckpt.path(), ": has no positional convolution kernel ('", prefix, kPosConv, "weight_g' or '", prefix,
                   kPosConv, "parametrizations.weight.original0')");
  has_lm_head = ckpt.contains("lm_head.weight");
  // transformers makes it only where the config masks during training (mask_time_prob or mask_feature_prob > 0).
  has_masked_spec_embed = ckpt.contains(prefix + "masked_spec_embed");
}

Wav2Vec2Model::Wav2Vec2Model(const Wav2Vec2Config& config, at::ScalarType dtype)
    : config_(config),
      dtype_(dtype),
      projection_norm_weight_(param(config.prefix + "feature_projection.layer_norm.weight", {config.conv_dim.back()})),
      projection_norm_bias_(param(config.prefix + "feature_projection.layer_norm.bias", {config.conv_dim.back()})),
      projection_weight_(
          param(config.prefix + "feature_projection.projection.weight", {config.hidden_size, config.conv_dim.back()})),
      projection_bias_(param(config.prefix + "feature_projection.projection.bias", {config.hidden_size})),
      pos_conv_g_(param(
          config.prefix + kPosConv + (config.legacy_weight_norm ? "weight_g" : "parametrizations.weight.original0"),
          {1, 1, config.num_conv_pos_embeddings})),
      pos_conv_v_(param(
          config.prefix + kPosConv + (config.legacy_weight_norm ? "weight_v" : "parametrizations.weight.original1"),
          {config.hidden_size, config.hidden_size / config.num_conv_pos_embedding_groups,
           config.num_conv_pos_embeddings})),
      pos_conv_bias_(param(config.prefix + kPosConv + "bias", {config.hidden_size})),
      encoder_norm_weight_(param(config.prefix + kEncoderNorm, {config.hidden_size})),
      encoder_norm_bias_(param(config.prefix + "encoder.layer_norm.bias", {config.hidden_size})) {
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
                   "wav2vec2 audio encoder: unsupported dtype ", at::toString(dtype),
                   " (float32, bfloat16 or float16)");
  OMNI_CHECK(config.num_hidden_layers > 0 && config.hidden_size > 0 && !config.conv_dim.empty(),
             "wav2vec2 config not initialized");
  int64_t in_channels = 1;
  for (size_t i = 0; i < config.conv_dim.size(); ++i) {
    const std::string name = config.prefix + "feature_extractor.conv_layers." + std::to_string(i) + ".";
    ConvLayer layer;
    layer.weight = &param(name + "conv.weight", {config.conv_dim[i], in_channels, config.conv_kernel[i]});
    layer.bias = config.conv_bias ? &param(name + "conv.bias", {config.conv_dim[i]}) : nullptr;
    layer.norm_weight = &param(name + "layer_norm.weight", {config.conv_dim[i]});
    layer.norm_bias = &param(name + "layer_norm.bias", {config.conv_dim[i]});
    convs_.push_back(layer);
    in_channels = config.conv_dim[i];
  }
  // Claimed so that loading accepts what transformers saves; the hidden states never read them.
  if (config.has_masked_spec_embed) param(config.prefix + "masked_spec_embed", {config.hidden_size});
  if (config.has_lm_head) {
    param("lm_head.weight", {config.vocab_size, config.hidden_size});
    param("lm_head.bias", {config.vocab_size});
  }
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) {
    layers_.push_back(
        child(config.prefix + kLayers + std::to_string(i), std::make_unique<Wav2Vec2EncoderLayer>(config)));
  }
}

std::unique_ptr<Wav2Vec2Model> Wav2Vec2Model::load(const std::string& dir, at::ScalarType dtype,
                                                   const at::Device& device) {
  auto config = Wav2Vec2Config::from_json(dir + "/config.json");
  const auto ckpt = io::Checkpoint::open(dir);
  config.resolve_names(ckpt);
  auto model = std::make_unique<Wav2Vec2Model>(config, dtype);
  load_state(*model, ckpt, dtype, device);
  return model;
}

const Module& Wav2Vec2Model::block(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "wav2vec2 layer index ", i, " out of range [0, ", num_blocks(), ")");
  return *layers_[i];
}

std::string Wav2Vec2Model::block_prefix(int i) const {
  return config_.prefix + kLayers + std::to_string(i) + ".";
}

std::vector<ParamRef> Wav2Vec2Model::root_parameters() const {
  return parameters_except({config_.prefix + kLayers});
}

at::Tensor Wav2Vec2Model::hidden_states(const at::Tensor& input_values, UnitHooks* hooks) const {
  const auto& c = config_;
  OMNI_CHECK(input_values.dim() == 2, "wav2vec2: input_values must be [B, N], got ", shape_str(input_values.sizes()));
  OMNI_CHECK_INPUT(c.frames_for(input_values.size(1)) > 0,
                   "the audio is too short for the wav2vec2 encoder: ", input_values.size(1),
                   " samples make no frame (its convolutions need ", c.conv_kernel[0], " at least)");
  if (hooks) hooks->before(UnitHooks::kRootUnit);
  // Feature extractor (Wav2Vec2LayerNormConvLayer x 7): conv -> LayerNorm over the channels -> GELU.
  auto x = input_values.to(projection_weight_.device(), dtype_).unsqueeze(1);  // [B, 1, N]
  for (size_t i = 0; i < convs_.size(); ++i) {
    const ConvLayer& l = convs_[i];
    x = at::conv1d(x, *l.weight, l.bias ? *l.bias : at::Tensor(), {c.conv_stride[i]});  // [B, C_i, T_i]
    x = at::layer_norm(x.transpose(1, 2), {c.conv_dim[i]}, *l.norm_weight, *l.norm_bias, c.layer_norm_eps)
            .transpose(1, 2);
    x = at::gelu(x);
  }
  x = x.transpose(1, 2);  // [B, T, C]
  // Feature projection: LayerNorm, then Linear C -> D.
  x = at::layer_norm(x, {c.conv_dim.back()}, projection_norm_weight_, projection_norm_bias_, c.layer_norm_eps);
  x = at::linear(x, projection_weight_, projection_bias_);  // [B, T, D]
  // Positional convolution (Wav2Vec2PositionalConvEmbedding): weight norm over the kernel taps (dim 2: each tap's
  // [D, D / G] slice divided by its norm, times g), grouped, padded K / 2 on both sides; an even kernel makes one
  // frame too many, dropped at the end (Wav2Vec2SamePadLayer); GELU.
  const auto kernel = at::_weight_norm(pos_conv_v_, pos_conv_g_, 2);
  auto pos = at::conv1d(x.transpose(1, 2), kernel, pos_conv_bias_, {1}, {c.num_conv_pos_embeddings / 2}, {1},
                        c.num_conv_pos_embedding_groups);  // [B, D, T (+1)]
  if (c.num_conv_pos_embeddings % 2 == 0) pos = pos.narrow(2, 0, pos.size(2) - 1);
  x = x + at::gelu(pos).transpose(1, 2);  // [B, T, D]
  std::vector<at::Tensor> states{x};
  for (int i = 0; i < num_blocks(); ++i) {
    if (hooks) hooks->before(i);
    x = layers_[i]->forward(x);
    if (hooks) hooks->after(i);
    // transformers 4.51.3 keeps each layer's input, then the last layer's output after the encoder's norm.
    if (i + 1 < num_blocks()) states.push_back(x);
  }
  states.push_back(at::layer_norm(x, {c.hidden_size}, encoder_norm_weight_, encoder_norm_bias_, c.layer_norm_eps));
  if (hooks) hooks->after(UnitHooks::kRootUnit);
  return at::stack(states);  // [L + 1, B, T, D]
}

}  // namespace omni::models
