#include "models/umt5_encoder.h"

#include <string>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {

const char* const kSharedName = "shared.weight";
const char* const kEncoderEmbedName = "encoder.embed_tokens.weight";
const char* const kBlockPrefix = "encoder.block.";

}  // namespace

Umt5Config Umt5Config::from_json(const std::string& path) {
  return from_json(io::read_json(path), path);
}

Umt5Config Umt5Config::from_json(const nlohmann::json& j, const std::string& source) {
  io::ConfigFile file(j, source, "UMT5EncoderModel");
  Umt5Config c;
  c.vocab_size = file.positive_int("vocab_size");
  c.d_model = file.positive_int("d_model");
  c.d_kv = file.positive_int("d_kv");
  c.d_ff = file.positive_int("d_ff");
  c.num_layers = file.positive_int("num_layers");
  c.num_heads = file.positive_int("num_heads");
  c.relative_attention_num_buckets = file.positive_int_or("relative_attention_num_buckets", 32);
  c.relative_attention_max_distance = file.positive_int_or("relative_attention_max_distance", 128);
  c.layer_norm_epsilon = file.number_or("layer_norm_epsilon", c.layer_norm_epsilon);
  OMNI_CHECK_INPUT(c.layer_norm_epsilon > 0, source, ": 'layer_norm_epsilon' must be positive");
  // UMT5Config derives the activation from feed_forward_proj ("gated-gelu" means gelu_new, whatever
  // dense_act_fn says), so that is the key that decides.
  const std::string ff = file.string_or("feed_forward_proj", "gated-gelu");
  OMNI_CHECK_INPUT(ff == "gated-gelu", source, ": feed_forward_proj is '", ff,
                   "'; only 'gated-gelu' (UMT5 as used by Wan) is supported");
  file.check_saved_dtype();
  // UMT5Config and PretrainedConfig keys that do not change the encoder's output: derived from
  // feed_forward_proj (dense_act_fn, is_gated_act), training (dropout_rate, classifier_dropout,
  // initializer_factor), the decoder and generation (UMT5EncoderModel forces is_decoder false and has no
  // head, so tie_word_embeddings does not apply), and bookkeeping.
  file.known({"dense_act_fn", "is_gated_act", "dropout_rate", "classifier_dropout", "initializer_factor",
              "num_decoder_layers", "is_decoder", "is_encoder_decoder", "decoder_start_token_id", "use_cache",
              "tie_word_embeddings", "pad_token_id", "eos_token_id", "bos_token_id", "architectures", "model_type",
              "transformers_version", "tokenizer_class"});
  // Bidirectional buckets: half per direction, half of those exact; the log range must be non-empty.
  OMNI_CHECK_INPUT(c.relative_attention_num_buckets >= 4 && c.relative_attention_num_buckets % 2 == 0, source,
                   ": relative_attention_num_buckets must be an even number >= 4, found ",
                   c.relative_attention_num_buckets);
  OMNI_CHECK_INPUT(c.relative_attention_max_distance > c.relative_attention_num_buckets / 4, source,
                   ": relative_attention_max_distance (", c.relative_attention_max_distance,
                   ") must exceed a quarter of relative_attention_num_buckets");
  file.warn_unknown();
  return c;
}

void Umt5Config::resolve_embedding(const io::Checkpoint& ckpt) {
  const bool has_shared = ckpt.contains(kSharedName);
  const bool has_encoder = ckpt.contains(kEncoderEmbedName);
  embedding_name = (!has_shared && has_encoder) ? kEncoderEmbedName : kSharedName;
  embedding_also_untied_copy = has_shared && has_encoder;
}

Umt5Encoder::Umt5Encoder(const Umt5Config& config, at::ScalarType dtype) : config_(config), dtype_(dtype) {
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16 || dtype == at::kHalf,
                   "UMT5 text encoder: unsupported dtype ", at::toString(dtype), " (float32, bfloat16 or float16)");
  OMNI_CHECK(config.num_layers > 0 && config.d_model > 0, "UMT5 config not initialized");
  embedding_ = &param(config.embedding_name, {config.vocab_size, config.d_model});
  // A duplicate tied copy is claimed so that loading accepts the checkpoint; forward never reads it.
  if (config.embedding_also_untied_copy) param(kEncoderEmbedName, {config.vocab_size, config.d_model});
  final_norm_ = &param("encoder.final_layer_norm.weight", {config.d_model});
  for (int64_t i = 0; i < config.num_layers; ++i) {
    blocks_.push_back(child(kBlockPrefix + std::to_string(i), std::make_unique<Umt5Block>(config, dtype)));
  }
}

std::unique_ptr<Umt5Encoder> Umt5Encoder::load(const std::string& text_encoder_dir, at::ScalarType dtype,
                                               const at::Device& device) {
  auto config = Umt5Config::from_json(text_encoder_dir + "/config.json");
  const auto ckpt = io::Checkpoint::open(text_encoder_dir);
  config.resolve_embedding(ckpt);
  auto encoder = std::make_unique<Umt5Encoder>(config, dtype);
  load_state(*encoder, ckpt, dtype, device);
  return encoder;
}

Module& Umt5Encoder::block(int i) {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "UMT5 block index ", i, " out of range [0, ", num_blocks(), ")");
  return *blocks_[i];
}

const Module& Umt5Encoder::block(int i) const {
  OMNI_CHECK(i >= 0 && i < num_blocks(), "UMT5 block index ", i, " out of range [0, ", num_blocks(), ")");
  return *blocks_[i];
}

std::string Umt5Encoder::block_prefix(int i) const {
  return kBlockPrefix + std::to_string(i) + ".";
}

std::vector<ParamRef> Umt5Encoder::root_parameters() const {
  return parameters_except({kBlockPrefix});
}

at::Tensor Umt5Encoder::forward(const at::Tensor& ids, const at::Tensor& mask, UnitHooks* hooks) const {
  OMNI_CHECK(ids.dim() == 2 && ids.scalar_type() == at::kLong, "UMT5: input ids must be [B, L] int64, got ",
             shape_str(ids.sizes()), " ", at::toString(ids.scalar_type()));
  OMNI_CHECK(mask.sizes() == ids.sizes(), "UMT5: attention mask ", shape_str(mask.sizes()), " does not match the ids ",
             shape_str(ids.sizes()));
  const int64_t len = ids.size(1);
  if (hooks) hooks->before(UnitHooks::kRootUnit);
  auto hidden = at::embedding(*embedding_, ids);  // [B, L, D]
  // The additive mask takes the embeddings' dtype, as in transformers.
  auto mask_bias = extended_attention_mask(mask.to(ids.device()), hidden.scalar_type());  // [B, 1, 1, L]
  auto buckets = relative_position_buckets(len, len, config_.relative_attention_num_buckets,
                                           config_.relative_attention_max_distance, ids.device());  // [L, L]
  for (int i = 0; i < num_blocks(); ++i) {
    if (hooks) hooks->before(i);
    hidden = blocks_[i]->forward(hidden, mask_bias, buckets);
    if (hooks) hooks->after(i);
  }
  hidden = t5_layer_norm(hidden, *final_norm_, config_.layer_norm_epsilon);  // [B, L, D]
  if (hooks) hooks->after(UnitHooks::kRootUnit);
  return hidden;
}

}  // namespace omni::models
