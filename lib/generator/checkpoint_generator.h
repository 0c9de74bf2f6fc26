// Random-weight checkpoints in the diffusers Wan2.2 layout, for any size: what the tests, the benchmarks and the
// multi-rank runs use when the real 14B weights are neither available nor affordable.
//
// The folder written is what `save_pretrained` writes for the real repositories (the tiny fixtures in
// tests/data/reference/<case>/model/ are the template): model_index.json, scheduler/scheduler_config.json,
// text_encoder/{config.json, model.safetensors}, tokenizer/{spiece.model, tokenizer_config.json,
// special_tokens_map.json}, transformer/ (and transformer_2/ for the A14B kinds) and vae/, each with config.json
// and diffusion_pytorch_model.safetensors (or shards plus *.safetensors.index.json).
//
// Tensor names and shapes are never listed here: each component's config.json is written first, parsed back by
// the model class that will load it, and the class's parameters() says what to generate. So a checkpoint always
// matches the code that reads it, and a change to a model class changes the generator with it.
//
// Everything is deterministic in the spec: the same spec (seed included) gives byte-identical files.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/module.h"

namespace omni::generator {

using models::Module;

// Which released model the checkpoint is shaped like.
enum class CheckpointKind {
  kT2vA14b,  // WanPipeline, two experts (transformer, transformer_2), Wan2.1 VAE (z 16), in = out = 16
  kI2vA14b,  // WanImageToVideoPipeline, two experts, Wan2.1 VAE, in = 2 z + 4 = 36, out = 16
  kTi2v5b,   // WanPipeline with expand_timesteps, one expert, Wan2.2 VAE (z 48, patch 2), in = out = 48
};

// "t2v-a14b", "i2v-a14b", "ti2v-5b".
const char* kind_name(CheckpointKind kind);
// Parses a kind name; a usage error listing the valid names otherwise.
CheckpointKind parse_kind(const std::string& name);

// WanTransformer3DModel's config (both experts share it).
struct TransformerSpec {
  int64_t num_layers = 2;
  int64_t num_attention_heads = 2;
  int64_t attention_head_dim = 12;
  int64_t ffn_dim = 32;
  int64_t in_channels = 16;
  int64_t out_channels = 16;
  int64_t text_dim = 32;  // must equal the text encoder's d_model
  int64_t freq_dim = 256;
  std::array<int64_t, 3> patch_size{1, 2, 2};
  double eps = 1e-6;
  int64_t rope_max_seq_len = 1024;
};

// UMT5EncoderModel's config.
struct TextEncoderSpec {
  int64_t d_model = 32;
  int64_t d_kv = 8;
  int64_t num_heads = 4;
  int64_t d_ff = 64;
  int64_t num_layers = 2;
  int64_t vocab_size = 160;
  int64_t relative_attention_num_buckets = 32;
  int64_t relative_attention_max_distance = 128;
  double layer_norm_epsilon = 1e-6;
};

// AutoencoderKLWan's config. version 21 is the Wan2.1 VAE (z 16, spatial 8x); 22 is the Wan2.2 VAE (z 48,
// residual, patch 2, spatial 16x).
struct VaeSpec {
  int version = 21;
  int64_t base_dim = 3;
  std::optional<int64_t> decoder_base_dim;
  int64_t z_dim = 16;
  std::vector<int64_t> dim_mult{1, 1, 1, 1};
  int64_t num_res_blocks = 1;
  std::vector<bool> temperal_downsample{false, true, true};
  bool is_residual = false;
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  std::optional<int64_t> patch_size;
  std::vector<double> latents_mean;  // z_dim values
  std::vector<double> latents_std;   // z_dim values, positive
};

struct CheckpointSpec {
  CheckpointKind kind = CheckpointKind::kT2vA14b;
  TransformerSpec transformer;
  TextEncoderSpec text_encoder;
  VaeSpec vae;
  // Pieces of the SentencePiece model to train; at most text_encoder.vocab_size. The built-in corpus supports
  // a few hundred pieces; a larger request gives what the corpus supports (never more than asked).
  int64_t tokenizer_vocab_size = 128;
  // A14B kinds: the timestep fraction where transformer hands over to transformer_2. Ignored for ti2v-5b.
  double boundary_ratio = 0.875;
  double flow_shift = 3.0;
  uint64_t seed = 0;
  // Storage dtype of the transformer(s) and the text encoder (float32 or bfloat16). Parameters the models keep
  // in float32 whatever the compute dtype (modulation tables, time embedder, norms) are stored in float32, as
  // diffusers' save_pretrained does after loading with torch_dtype=bfloat16.
  at::ScalarType dtype = at::kFloat;
  at::ScalarType vae_dtype = at::kFloat;  // the released VAEs are float32
  // > 0: every component whose weights exceed this many bytes is written as shards of at most this size (a
  // larger tensor gets a shard of its own) with the Hugging Face index json; 0: one file per component.
  int64_t max_shard_bytes = 0;

  bool has_transformer_2() const { return kind != CheckpointKind::kTi2v5b; }
  bool image_to_video() const { return kind == CheckpointKind::kI2vA14b; }

  // Throws a usage error (exit 2) naming the field when the spec cannot make a loadable checkpoint: sizes not
  // positive, text_dim != d_model, channels that do not match the kind and z_dim, vocabularies, ratios, dtypes.
  void validate() const;
};

// Preset names: "tiny" (the fixtures' sizes), "tiny-heads4" and "tiny-heads8" (the tiny model with 4 or 8
// attention heads, for sequence-parallel degrees up to 8), "small" (a few MB, for benchmarks of the parallel
// plumbing) and "full" (the released models' real sizes: tens of GB, generated in memory one component at a
// time).
std::vector<std::string> preset_names();
// The spec of `preset` for `kind` (seed 0, float32, unsharded); a usage error for an unknown preset.
CheckpointSpec make_preset(CheckpointKind kind, const std::string& preset);

// Sets z_dim and the channel counts that follow from it for the spec's kind (VAE latent channels, transformer
// in/out channels, latents_mean/std), keeping the other fields.
void set_latent_channels(CheckpointSpec& spec, int64_t z_dim);

// The JSON files, exactly the keys the reference writers put there (see the fixtures).
nlohmann::json model_index_json(const CheckpointSpec& spec);
nlohmann::json scheduler_config_json(const CheckpointSpec& spec);
nlohmann::json transformer_config_json(const CheckpointSpec& spec);
nlohmann::json text_encoder_config_json(const CheckpointSpec& spec);
nlohmann::json vae_config_json(const CheckpointSpec& spec);
nlohmann::json tokenizer_config_json(const CheckpointSpec& spec);
nlohmann::json special_tokens_map_json();

// The built-in English training corpus: `count` short video-prompt-like sentences, the same on every call.
std::vector<std::string> tokenizer_corpus(int count = 400);
// Trains a SentencePiece unigram model with T5's ids (pad 0, eos 1, unk 2, no bos) on tokenizer_corpus(),
// single-threaded with no sampling or shuffling, and returns the serialized model (spiece.model's bytes).
std::string train_tokenizer(int64_t vocab_size);

// Random values for every parameter of `module`, in parameters() order, each in
// resolve_param_dtype(rule, dtype). Drawn in float32 from a CPU generator seeded with `seed`, tensor after
// tensor, then converted. Scales keep activations finite through many layers: weights of linear and conv
// layers N(0, 1/fan_in), embeddings N(0, 1), norm scales 1 + N(0, 0.1^2), biases N(0, 0.02^2), modulation
// tables N(0, 1/dim), relative attention biases N(0, 0.1^2).
std::vector<std::pair<std::string, at::Tensor>> random_weights(const Module& module, uint64_t seed,
                                                               at::ScalarType dtype);

// Writes the checkpoint of `spec` to `output_dir` (each weight component drawn by random_weights() from its own
// stream, derived from spec.seed and the component's folder name): into a temporary folder next to it, renamed
// into place when complete, so that an interrupted run never leaves a partial checkpoint. An existing
// `output_dir` is a usage error unless `overwrite` (then it is replaced once the new one is complete). Returns
// output_dir, normalized.
std::string generate_checkpoint(const CheckpointSpec& spec, const std::string& output_dir, bool overwrite = false);

}  // namespace omni::generator
