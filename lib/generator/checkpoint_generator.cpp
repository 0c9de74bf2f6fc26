#include "generator/checkpoint_generator.h"

#include <ATen/CPUGeneratorImpl.h>
#include <dlfcn.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <string_view>

#include "core/dtype.h"
#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "io/safetensors.h"
#include "models/autoencoder_kl_wan.h"
#include "models/umt5_encoder.h"
#include "models/wan_transformer.h"
#include "models/wan_transformer_config.h"
#include "text/sentencepiece_library.h"

namespace fs = std::filesystem;

namespace omni::generator {

using models::AutoencoderKLWan;
using models::Module;
using models::Umt5Config;
using models::Umt5Encoder;
using models::WanTransformer3DModel;
using models::WanTransformerConfig;
using models::WanVaeConfig;

namespace {

using nlohmann::json;

// What the fixtures' writers stamped; kept so that our configs carry the same keys and values.
const char* const kDiffusersVersion = "0.40.0.dev0";
const char* const kTransformersVersion = "5.17.0";

// diffusers' default latent statistics of the Wan2.1 VAE (what the released Wan2.2 A14B repositories use).
const std::vector<double> kWan21LatentsMean{-0.7571, -0.7089, -0.9113, 0.1075,  -0.1745, 0.9653,  -0.1517, 1.5508,
                                            0.4134,  -0.0715, 0.5517,  -0.3632, -0.1922, -0.9497, 0.2503,  -0.2921};
const std::vector<double> kWan21LatentsStd{2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
                                           3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.916};

// splitmix64: spreads a seed so that nearby seeds (0, 1, 2) give unrelated streams.
uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Each component draws from its own stream, so that resizing one component leaves the others' weights alone
// and the two experts differ.
uint64_t component_seed(uint64_t seed, const std::string& component) {
  uint64_t h = 0xCBF29CE484222325ull;  // FNV-1a
  for (unsigned char c : component) h = (h ^ c) * 0x100000001B3ull;
  return mix64(seed ^ mix64(h));
}

std::string leaf_name(const std::string& name) {
  const auto dot = name.rfind('.');
  return dot == std::string::npos ? name : name.substr(dot + 1);
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  OMNI_CHECK(out.good(), "cannot create ", path);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.close();
  OMNI_CHECK(out.good(), "cannot write ", path);
}

void write_json(const std::string& path, const json& j) {
  write_text(path, j.dump(2) + "\n");
}

// Removes the temporary folder unless the checkpoint was moved into place.
class TempFolder {
 public:
  explicit TempFolder(fs::path path) : path_(std::move(path)) {}
  ~TempFolder() {
    if (!released_) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
  }
  TempFolder(const TempFolder&) = delete;
  TempFolder& operator=(const TempFolder&) = delete;
  const fs::path& path() const { return path_; }
  void release() { released_ = true; }

 private:
  fs::path path_;
  bool released_ = false;
};

// Writes `module`'s random weights into `dir` as diffusers / transformers name the files.
void write_weights(const Module& module, const std::string& dir, const std::string& stem, uint64_t seed,
                   at::ScalarType dtype, int64_t max_shard_bytes) {
  auto tensors = random_weights(module, seed, dtype);
  int64_t total = 0;
  for (const auto& nt : tensors) total += nt.second.numel() * static_cast<int64_t>(nt.second.element_size());
  if (max_shard_bytes > 0 && total > max_shard_bytes) {
    io::write_sharded_safetensors(dir, stem, tensors, max_shard_bytes);
  } else {
    io::write_safetensors(dir + "/" + stem + ".safetensors", tensors, {{"format", "pt"}});
  }
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// Kinds, presets, validation

const char* kind_name(CheckpointKind kind) {
  switch (kind) {
    case CheckpointKind::kT2vA14b:
      return "t2v-a14b";
    case CheckpointKind::kI2vA14b:
      return "i2v-a14b";
    case CheckpointKind::kTi2v5b:
      return "ti2v-5b";
  }
  return "?";
}

CheckpointKind parse_kind(const std::string& name) {
  for (auto k : {CheckpointKind::kT2vA14b, CheckpointKind::kI2vA14b, CheckpointKind::kTi2v5b}) {
    if (name == kind_name(k)) return k;
  }
  OMNI_FAIL_USAGE("unknown checkpoint kind '", name, "'; expected t2v-a14b, i2v-a14b or ti2v-5b");
}

std::vector<std::string> preset_names() {
  return {"tiny", "tiny-heads4", "tiny-heads8", "small", "full"};
}

void set_latent_channels(CheckpointSpec& spec, int64_t z_dim) {
  OMNI_CHECK_USAGE(z_dim > 0, "the latent channel count (VAE z_dim) must be positive, got ", z_dim);
  auto& v = spec.vae;
  v.z_dim = z_dim;
  if (v.version == 21 && z_dim == static_cast<int64_t>(kWan21LatentsMean.size())) {
    v.latents_mean = kWan21LatentsMean;
    v.latents_std = kWan21LatentsStd;
  } else {
    // The released Wan2.2 statistics belong to trained weights; for random ones the identity is as good.
    v.latents_mean.assign(z_dim, 0.0);
    v.latents_std.assign(z_dim, 1.0);
  }
  auto& t = spec.transformer;
  t.out_channels = z_dim;
  // I2V concatenates the noisy latents, a 4-channel first-frame mask and the encoded condition clip.
  t.in_channels = spec.kind == CheckpointKind::kI2vA14b ? 2 * z_dim + 4 : z_dim;
}

CheckpointSpec make_preset(CheckpointKind kind, const std::string& preset) {
  CheckpointSpec s;
  s.kind = kind;
  const bool wan22_vae = kind == CheckpointKind::kTi2v5b;
  s.boundary_ratio = kind == CheckpointKind::kI2vA14b ? 0.9 : 0.875;
  s.flow_shift = kind == CheckpointKind::kT2vA14b ? 3.0 : 5.0;

  auto& v = s.vae;
  v.version = wan22_vae ? 22 : 21;
  if (wan22_vae) {
    v.is_residual = true;
    v.patch_size = 2;
    v.in_channels = v.out_channels = 12;  // RGB x patch 2 x 2
  }
  auto& t = s.transformer;
  auto& te = s.text_encoder;

  if (preset == "tiny" || preset == "tiny-heads4" || preset == "tiny-heads8") {
    // The fixtures' sizes (tests/data/reference/*/model/*/config.json).
    if (preset == "tiny-heads4") t.num_attention_heads = 4;
    if (preset == "tiny-heads8") t.num_attention_heads = 8;
  } else if (preset == "small") {
    t.num_layers = 4;
    t.num_attention_heads = 8;
    t.attention_head_dim = 16;
    t.ffn_dim = 256;
    te.d_model = 64;
    te.d_kv = 16;
    te.num_heads = 4;
    te.d_ff = 128;
    te.vocab_size = 256;
    s.tokenizer_vocab_size = 200;
    v.base_dim = 8;
    v.dim_mult = {1, 2, 2, 2};
  } else if (preset == "full") {
    // Wan-AI/Wan2.2-{T2V-A14B, I2V-A14B, TI2V-5B}-Diffusers.
    if (wan22_vae) {
      t.num_layers = 30;
      t.num_attention_heads = 24;
      t.ffn_dim = 14336;
      v.base_dim = 160;
      v.decoder_base_dim = 256;
    } else {
      t.num_layers = 40;
      t.num_attention_heads = 40;
      t.ffn_dim = 13824;
      v.base_dim = 96;
    }
    t.attention_head_dim = 128;
    te.d_model = 4096;
    te.d_kv = 64;
    te.num_heads = 64;
    te.d_ff = 10240;
    te.num_layers = 24;
    te.vocab_size = 256384;
    s.tokenizer_vocab_size = 32000;  // the corpus supports far fewer; see CheckpointSpec
    v.dim_mult = {1, 2, 4, 4};
    v.num_res_blocks = 2;
    s.dtype = at::kBFloat16;
  } else {
    std::string names;
    for (const auto& n : preset_names()) names += (names.empty() ? "" : ", ") + n;
    OMNI_FAIL_USAGE("unknown checkpoint preset '", preset, "'; expected one of ", names);
  }
  t.text_dim = te.d_model;
  set_latent_channels(s, wan22_vae ? 48 : 16);
  return s;
}

void CheckpointSpec::validate() const {
  const auto positive = [](const char* what, int64_t v) {
    OMNI_CHECK_USAGE(v > 0, "checkpoint spec: ", what, " must be positive, got ", v);
  };
  const auto& t = transformer;
  positive("transformer layers", t.num_layers);
  positive("transformer attention heads", t.num_attention_heads);
  positive("transformer head dim", t.attention_head_dim);
  positive("transformer ffn dim", t.ffn_dim);
  positive("transformer freq dim", t.freq_dim);
  positive("transformer rope_max_seq_len", t.rope_max_seq_len);
  for (int64_t p : t.patch_size) positive("transformer patch size", p);
  OMNI_CHECK_USAGE(t.attention_head_dim % 2 == 0,
                   "checkpoint spec: the transformer head dim must be even (RoPE "
                   "rotates pairs), got ",
                   t.attention_head_dim);
  OMNI_CHECK_USAGE(t.freq_dim % 2 == 0, "checkpoint spec: the transformer freq dim must be even, got ", t.freq_dim);
  const auto& te = text_encoder;
  positive("text encoder d_model", te.d_model);
  positive("text encoder d_kv", te.d_kv);
  positive("text encoder heads", te.num_heads);
  positive("text encoder d_ff", te.d_ff);
  positive("text encoder layers", te.num_layers);
  positive("text encoder vocab size", te.vocab_size);
  OMNI_CHECK_USAGE(t.text_dim == te.d_model, "checkpoint spec: the transformer's text_dim (", t.text_dim,
                   ") must equal the text encoder's d_model (", te.d_model, "): the prompt embeddings feed it");
  // Below ~64 pieces SentencePiece cannot hold the corpus's characters plus the special tokens.
  OMNI_CHECK_USAGE(tokenizer_vocab_size >= 64 && tokenizer_vocab_size <= te.vocab_size,
                   "checkpoint spec: the tokenizer vocabulary (", tokenizer_vocab_size,
                   ") must be at least 64 and at most the text encoder's vocab_size (", te.vocab_size, ")");
  const auto& v = vae;
  OMNI_CHECK_USAGE(v.version == 21 || v.version == 22, "checkpoint spec: VAE version must be 21 or 22, got ",
                   v.version);
  OMNI_CHECK_USAGE((v.version == 22) == (kind == CheckpointKind::kTi2v5b), "checkpoint spec: ", kind_name(kind),
                   " uses the Wan", kind == CheckpointKind::kTi2v5b ? "2.2" : "2.1", " VAE, not version ", v.version);
  positive("VAE base dim", v.base_dim);
  positive("VAE z_dim", v.z_dim);
  positive("VAE res blocks", v.num_res_blocks);
  OMNI_CHECK_USAGE(
      static_cast<int64_t>(v.latents_mean.size()) == v.z_dim && static_cast<int64_t>(v.latents_std.size()) == v.z_dim,
      "checkpoint spec: latents_mean and latents_std need z_dim = ", v.z_dim, " values, got ", v.latents_mean.size(),
      " and ", v.latents_std.size());
  const int64_t expect_in = kind == CheckpointKind::kI2vA14b ? 2 * v.z_dim + 4 : v.z_dim;
  OMNI_CHECK_USAGE(t.in_channels == expect_in && t.out_channels == v.z_dim, "checkpoint spec: a ", kind_name(kind),
                   " transformer with VAE z_dim ", v.z_dim, " needs in/out channels ", expect_in, "/", v.z_dim,
                   ", got ", t.in_channels, "/", t.out_channels);
  if (has_transformer_2()) {
    OMNI_CHECK_USAGE(boundary_ratio > 0.0 && boundary_ratio < 1.0,
                     "checkpoint spec: boundary_ratio must be in (0, 1), got ", boundary_ratio);
  }
  OMNI_CHECK_USAGE(flow_shift > 0.0, "checkpoint spec: flow_shift must be positive, got ", flow_shift);
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16,
                   "checkpoint spec: the storage dtype must be float32 or bfloat16");
  OMNI_CHECK_USAGE(vae_dtype == at::kFloat || vae_dtype == at::kBFloat16,
                   "checkpoint spec: the VAE storage dtype must be float32 or bfloat16");
  OMNI_CHECK_USAGE(max_shard_bytes >= 0, "checkpoint spec: max shard bytes must be >= 0, got ", max_shard_bytes);
}

// ---------------------------------------------------------------------------------------------------------
// JSON files

json model_index_json(const CheckpointSpec& spec) {
  const auto entry = [](const char* lib, const char* cls) { return json::array({lib, cls}); };
  const json none = json::array({nullptr, nullptr});
  json j;
  j["_class_name"] = spec.image_to_video() ? "WanImageToVideoPipeline" : "WanPipeline";
  j["_diffusers_version"] = kDiffusersVersion;
  j["boundary_ratio"] = spec.has_transformer_2() ? json(spec.boundary_ratio) : json(nullptr);
  j["expand_timesteps"] = spec.kind == CheckpointKind::kTi2v5b;
  if (spec.image_to_video()) {
    // Wan2.2 I2V has no CLIP image branch; save_pretrained records the optional components as null.
    j["image_encoder"] = none;
    j["image_processor"] = none;
  }
  j["scheduler"] = entry("diffusers", "UniPCMultistepScheduler");
  j["text_encoder"] = entry("transformers", "UMT5EncoderModel");
  j["tokenizer"] = entry("transformers", "T5Tokenizer");
  j["transformer"] = entry("diffusers", "WanTransformer3DModel");
  j["transformer_2"] = spec.has_transformer_2() ? entry("diffusers", "WanTransformer3DModel") : none;
  j["vae"] = entry("diffusers", "AutoencoderKLWan");
  return j;
}

json scheduler_config_json(const CheckpointSpec& spec) {
  return json{{"_class_name", "UniPCMultistepScheduler"},
              {"_diffusers_version", kDiffusersVersion},
              {"beta_end", 0.02},
              {"beta_schedule", "linear"},
              {"beta_start", 0.0001},
              {"disable_corrector", json::array()},
              {"dynamic_thresholding_ratio", 0.995},
              {"final_sigmas_type", "zero"},
              {"flow_shift", spec.flow_shift},
              {"lower_order_final", true},
              {"num_train_timesteps", 1000},
              {"predict_x0", true},
              {"prediction_type", "flow_prediction"},
              {"rescale_betas_zero_snr", false},
              {"sample_max_value", 1.0},
              {"shift_terminal", nullptr},
              {"sigma_max", nullptr},
              {"sigma_min", nullptr},
              {"solver_order", 2},
              {"solver_p", nullptr},
              {"solver_type", "bh2"},
              {"steps_offset", 0},
              {"thresholding", false},
              {"time_shift_type", "exponential"},
              {"timestep_spacing", "linspace"},
              {"trained_betas", nullptr},
              {"use_beta_sigmas", false},
              {"use_dynamic_shifting", false},
              {"use_exponential_sigmas", false},
              {"use_flow_sigmas", true},
              {"use_karras_sigmas", false}};
}

json transformer_config_json(const CheckpointSpec& spec) {
  const auto& t = spec.transformer;
  return json{{"_class_name", "WanTransformer3DModel"},
              {"_diffusers_version", kDiffusersVersion},
              {"added_kv_proj_dim", nullptr},
              {"attention_head_dim", t.attention_head_dim},
              {"cross_attn_norm", true},
              {"eps", t.eps},
              {"ffn_dim", t.ffn_dim},
              {"freq_dim", t.freq_dim},
              {"image_dim", nullptr},
              {"in_channels", t.in_channels},
              {"num_attention_heads", t.num_attention_heads},
              {"num_layers", t.num_layers},
              {"out_channels", t.out_channels},
              {"patch_size", json::array({t.patch_size[0], t.patch_size[1], t.patch_size[2]})},
              {"pos_embed_seq_len", nullptr},
              {"qk_norm", "rms_norm_across_heads"},
              {"rope_max_seq_len", t.rope_max_seq_len},
              {"text_dim", t.text_dim}};
}

json text_encoder_config_json(const CheckpointSpec& spec) {
  const auto& te = spec.text_encoder;
  return json{{"architectures", json::array({"UMT5EncoderModel"})},
              {"classifier_dropout", 0.0},
              {"d_ff", te.d_ff},
              {"d_kv", te.d_kv},
              {"d_model", te.d_model},
              {"decoder_start_token_id", 0},
              {"dense_act_fn", "gelu_new"},
              {"dropout_rate", 0.0},
              {"dtype", dtype_name(spec.dtype)},
              {"eos_token_id", 1},
              {"feed_forward_proj", "gated-gelu"},
              {"initializer_factor", 1.0},
              {"is_decoder", false},
              {"is_encoder_decoder", true},
              {"is_gated_act", true},
              {"layer_norm_epsilon", te.layer_norm_epsilon},
              {"model_type", "umt5"},
              {"num_decoder_layers", te.num_layers},
              {"num_heads", te.num_heads},
              {"num_layers", te.num_layers},
              {"pad_token_id", 0},
              {"relative_attention_max_distance", te.relative_attention_max_distance},
              {"relative_attention_num_buckets", te.relative_attention_num_buckets},
              {"tie_word_embeddings", true},
              {"transformers_version", kTransformersVersion},
              {"use_cache", true},
              {"vocab_size", te.vocab_size}};
}

json vae_config_json(const CheckpointSpec& spec) {
  const auto& v = spec.vae;
  int64_t temporal = 1;
  for (bool down : v.temperal_downsample) temporal *= down ? 2 : 1;
  const int64_t spatial = (int64_t{1} << (v.dim_mult.size() - 1)) * v.patch_size.value_or(1);
  json temperal = json::array();
  for (bool down : v.temperal_downsample) temperal.push_back(down);
  return json{{"_class_name", "AutoencoderKLWan"},
              {"_diffusers_version", kDiffusersVersion},
              {"attn_scales", json::array()},
              {"base_dim", v.base_dim},
              {"decoder_base_dim", v.decoder_base_dim ? json(*v.decoder_base_dim) : json(nullptr)},
              {"dim_mult", v.dim_mult},
              {"dropout", 0.0},
              {"in_channels", v.in_channels},
              {"is_residual", v.is_residual},
              {"latents_mean", v.latents_mean},
              {"latents_std", v.latents_std},
              {"num_res_blocks", v.num_res_blocks},
              {"out_channels", v.out_channels},
              {"patch_size", v.patch_size ? json(*v.patch_size) : json(nullptr)},
              {"scale_factor_spatial", spatial},
              {"scale_factor_temporal", temporal},
              {"temperal_downsample", temperal},
              {"z_dim", v.z_dim}};
}

json tokenizer_config_json(const CheckpointSpec&) {
  return json{{"backend", "tokenizers"},
              {"eos_token", "</s>"},
              {"extra_ids", 0},
              {"extra_special_tokens", json::array()},
              {"is_local", true},
              {"local_files_only", false},
              {"model_max_length", 512},
              {"pad_token", "<pad>"},
              {"tokenizer_class", "T5Tokenizer"},
              {"unk_id", 2},
              {"unk_token", "<unk>"}};
}

json special_tokens_map_json() {
  return json{{"pad_token", "<pad>"}, {"eos_token", "</s>"}, {"unk_token", "<unk>"}};
}

// ---------------------------------------------------------------------------------------------------------
// Tokenizer

std::vector<std::string> tokenizer_corpus(int count) {
  static const char* const kSubjects[] = {
      "a cat",        "a dog",         "a red fox",    "an old man", "a young woman",      "a small bird",
      "a robot",      "a white horse", "two children", "a surfer",   "a golden retriever", "a panda",
      "an astronaut", "a chef",        "a musician"};
  static const char* const kActions[] = {"walks slowly",    "runs quickly",       "dances",
                                         "plays the piano", "jumps over a fence", "flies",
                                         "swims",           "drives a car",       "reads a book",
                                         "sleeps",          "plays the guitar",   "looks at the camera",
                                         "rides a bicycle", "climbs a tree",      "eats an apple"};
  static const char* const kPlaces[] = {"on the beach",    "in a forest",   "through the city", "under the moon",
                                        "near a river",    "on a mountain", "in the snow",      "across a bridge",
                                        "at sunset",       "in the rain",   "inside a kitchen", "on a busy street",
                                        "in a quiet park", "by the ocean",  "on a rooftop"};
  static const char* const kStyles[] = {"cinematic lighting",
                                        "close-up shot",
                                        "soft colors",
                                        "4k, highly detailed",
                                        "slow motion",
                                        "wide angle",
                                        "warm morning light",
                                        "night scene with stars",
                                        "realistic, high quality",
                                        "the camera pans left",
                                        "shot on 35mm film",
                                        "vivid green and blue",
                                        "dramatic clouds",
                                        "blurry, low quality",
                                        "static frame, overexposed",
                                        "bright colors (vintage style)"};
  std::vector<std::string> out;
  out.reserve(count);
  uint64_t state = 0x5EED;  // fixed: the corpus is part of the format, not of the seed
  const auto next = [&state](size_t n) {
    state = mix64(state);
    return static_cast<size_t>(state % n);
  };
  for (int i = 0; i < count; ++i) {
    std::string s = kSubjects[next(std::size(kSubjects))];
    if (i % 3 == 0) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    s += std::string(" ") + kActions[next(std::size(kActions))] + " " + kPlaces[next(std::size(kPlaces))];
    s += std::string(", ") + kStyles[next(std::size(kStyles))];
    if (i % 7 == 0) s += ", shot " + std::to_string(1 + next(20)) + " of 24";
    s += (i % 11 == 0) ? "!" : ".";
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

// ---- libsentencepiece_train, opened privately (text/sentencepiece_library.h) -----------------------------

struct Trainer {
  using TrainFn = sentencepiece::util::Status (*)(std::string_view args, sentencepiece::SentenceIterator* it,
                                                  std::string* serialized_model);
  text::SentencePieceLibrary library{{"libsentencepiece_train.so.0", "libsentencepiece_train.so"},
                                     "tokenizer training needs it"};
  TrainFn train = nullptr;                         // SentencePieceTrainer::Train(args, it, out)
  void (*set_min_log_level)(int level) = nullptr;  // logging::SetMinLogLevel(int)
};

const Trainer& trainer_library() {
  static const Trainer lib = [] {
    Trainer l;
    l.train = reinterpret_cast<Trainer::TrainFn>(
        l.library.symbol("_ZN13sentencepiece20SentencePieceTrainer5TrainESt17basic_string_viewIcSt11char_traitsIcEEPNS_"
                         "16SentenceIteratorEPNSt7__cxx1112basic_stringIcS3_SaIcEEE"));
    l.set_min_log_level =
        reinterpret_cast<void (*)(int)>(l.library.symbol("_ZN13sentencepiece7logging14SetMinLogLevelEi"));
    return l;
  }();
  lib.library.check();
  OMNI_CHECK(lib.train && lib.set_min_log_level,
             "cannot load libsentencepiece_train (tokenizer training needs it): a trainer entry point is missing");
  return lib;
}

// ---- protobuf wire format, just enough to drop one field ---------------------------------------------------

uint64_t read_varint(const std::string& b, size_t& i) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    OMNI_CHECK(i < b.size(), "SentencePiece model: truncated varint");
    const auto byte = static_cast<uint8_t>(b[i++]);
    v |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if (!(byte & 0x80)) return v;
  }
  OMNI_FAIL("SentencePiece model: varint too long");
}

void write_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

// Calls fn(field, wire_type, begin, end) for each field of the message in b; [begin, end) covers the whole
// field (key included), and for length-delimited fields payload_begin is where the payload starts.
template <typename Fn>
void for_each_field(const std::string& b, Fn&& fn) {
  size_t i = 0;
  while (i < b.size()) {
    const size_t begin = i;
    const uint64_t key = read_varint(b, i);
    const int wire = static_cast<int>(key & 7);
    size_t payload = i;
    switch (wire) {
      case 0:
        read_varint(b, i);
        break;
      case 1:
        i += 8;
        break;
      case 5:
        i += 4;
        break;
      case 2: {
        const uint64_t len = read_varint(b, i);
        payload = i;
        i += len;
        break;
      }
      default:
        OMNI_FAIL("SentencePiece model: unsupported protobuf wire type ", wire);
    }
    OMNI_CHECK(i <= b.size(), "SentencePiece model: field runs past the end");
    fn(key >> 3, wire, begin, payload, i);
  }
}

// The trainer records the input file's path in ModelProto.trainer_spec.input (fields 2 and 1). The path is a
// scratch file, so it is dropped: the model then reads as if trained from an iterator, the same bytes every run.
std::string drop_recorded_input(const std::string& model) {
  std::string out;
  for_each_field(model, [&](uint64_t field, int wire, size_t begin, size_t payload, size_t end) {
    if (field != 2 || wire != 2) {
      out.append(model, begin, end - begin);
      return;
    }
    const std::string spec = model.substr(payload, end - payload);
    std::string kept;
    for_each_field(spec, [&](uint64_t f, int w, size_t b, size_t, size_t e) {
      if (!(f == 1 && w == 2)) kept.append(spec, b, e - b);
    });
    write_varint(out, (2 << 3) | 2);
    write_varint(out, kept.size());
    out += kept;
  });
  return out;
}

}  // namespace

std::string train_tokenizer(int64_t vocab_size) {
  OMNI_CHECK_USAGE(vocab_size >= 64, "the tokenizer vocabulary must hold at least 64 pieces, got ", vocab_size);
  const auto& lib = trainer_library();

  // The corpus goes through a scratch file: the iterator interface would need SentencePiece's Status
  // constructors, which cannot be reached without linking the library.
  const char* base = std::getenv("TMPDIR");
  std::string corpus_path = std::string(base && *base ? base : "/tmp") + "/omni_spm_corpus_XXXXXX";
  const int fd = ::mkstemp(corpus_path.data());
  OMNI_CHECK(fd >= 0, "cannot create a scratch file for the tokenizer corpus (", corpus_path,
             "): ", std::strerror(errno));
  ::close(fd);
  struct Remove {
    std::string path;
    ~Remove() { std::remove(path.c_str()); }
  } remove_corpus{corpus_path};
  std::string text;
  for (const auto& s : tokenizer_corpus()) text += s + "\n";
  write_text(corpus_path, text);

  // T5's ids; one thread and no sampling or shuffling make the model a function of the corpus alone. No
  // model_prefix: the model comes back serialized instead of being written to <prefix>.model.
  const std::string args =
      str_cat("--input=", corpus_path, " --model_type=unigram --vocab_size=", vocab_size,
              " --pad_id=0 --eos_id=1 --unk_id=2 --bos_id=-1 --num_threads=1 --input_sentence_size=0"
              " --shuffle_input_sentence=false --hard_vocab_limit=false --character_coverage=1.0 --minloglevel=2");
  lib.set_min_log_level(2);  // errors only; the trainer reports every EM round at INFO
  std::string model;
  const std::string message = lib.library.status_error([&] { return lib.train(args, nullptr, &model); });
  OMNI_CHECK(message.empty(), "SentencePiece training failed (vocab_size ", vocab_size, "): ", message);
  OMNI_CHECK(!model.empty(), "SentencePiece training returned an empty model");
  return drop_recorded_input(model);
}

// ---------------------------------------------------------------------------------------------------------
// Weights

std::vector<std::pair<std::string, at::Tensor>> random_weights(const Module& module, uint64_t seed,
                                                               at::ScalarType dtype) {
  auto gen = at::detail::createCPUGenerator(seed);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& p : module.parameters()) {
    const std::string leaf = leaf_name(p.name);
    at::Tensor t = at::randn(p.shape, gen, f32);
    const int64_t fan_in = p.shape.empty() || p.shape[0] == 0 ? 1 : t.numel() / p.shape[0];
    if (leaf == "bias") {
      t.mul_(0.02);
    } else if (leaf == "gamma" ||
               (leaf == "weight" && (p.name.find("norm") != std::string::npos || p.shape.size() == 1))) {
      t.mul_(0.1).add_(1.0);  // RMS / layer norm scales: near one, but not exactly (a dropped scale would show)
    } else if (leaf == "scale_shift_table") {
      t.div_(std::sqrt(static_cast<double>(p.shape.back())));  // diffusers' own initialization
    } else if (p.name.find("relative_attention_bias") != std::string::npos) {
      t.mul_(0.1);
    } else if (p.name == "shared.weight" || ends_with(p.name, "embed_tokens.weight")) {
      // Unit-variance embeddings, as T5 initializes them; the first layer norm rescales anyway.
    } else {
      t.div_(std::sqrt(static_cast<double>(fan_in)));  // linear and conv weights: unit-variance outputs
    }
    out.emplace_back(p.name, t.to(resolve_param_dtype(p.dtype_rule, dtype)));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// The checkpoint folder

std::string generate_checkpoint(const CheckpointSpec& spec, const std::string& output_dir, bool overwrite) {
  spec.validate();
  OMNI_CHECK_USAGE(!output_dir.empty(), "the checkpoint output folder must not be empty");
  fs::path target = fs::path(output_dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "dir/" -> "dir"
  OMNI_CHECK_USAGE(overwrite || !fs::exists(target), target.string(),
                   " already exists; choose another folder or pass --overwrite to replace it");
  fs::path parent = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  OMNI_CHECK_USAGE(!ec && fs::is_directory(parent), "cannot create the parent folder ", parent.string(), ": ",
                   ec.message());

  const std::string pid = std::to_string(::getpid());
  TempFolder tmp(parent / ("." + target.filename().string() + ".tmp-" + pid));
  fs::remove_all(tmp.path(), ec);
  for (const char* sub : {"scheduler", "text_encoder", "tokenizer", "transformer", "vae"}) {
    fs::create_directories(tmp.path() / sub);
  }
  if (spec.has_transformer_2()) fs::create_directories(tmp.path() / "transformer_2");
  const std::string root = tmp.path().string();

  OMNI_INFO("writing a ", kind_name(spec.kind), " checkpoint (seed ", spec.seed, ") to ", target.string());
  write_json(root + "/model_index.json", model_index_json(spec));
  write_json(root + "/scheduler/scheduler_config.json", scheduler_config_json(spec));

  // Tokenizer.
  write_text(root + "/tokenizer/spiece.model", train_tokenizer(spec.tokenizer_vocab_size));
  write_json(root + "/tokenizer/tokenizer_config.json", tokenizer_config_json(spec));
  write_json(root + "/tokenizer/special_tokens_map.json", special_tokens_map_json());

  // Each component: its config first, then the weights of the model class built from that very file.
  {
    const std::string dir = root + "/text_encoder";
    write_json(dir + "/config.json", text_encoder_config_json(spec));
    Umt5Encoder encoder(Umt5Config::from_json(dir + "/config.json"), spec.dtype);
    write_weights(encoder, dir, "model", component_seed(spec.seed, "text_encoder"), spec.dtype, spec.max_shard_bytes);
  }
  std::vector<std::string> experts{"transformer"};
  if (spec.has_transformer_2()) experts.push_back("transformer_2");
  for (const auto& name : experts) {
    const std::string dir = root + "/" + name;
    write_json(dir + "/config.json", transformer_config_json(spec));
    WanTransformer3DModel model(WanTransformerConfig::load(dir), spec.dtype);
    write_weights(model, dir, "diffusion_pytorch_model", component_seed(spec.seed, name), spec.dtype,
                  spec.max_shard_bytes);
  }
  {
    const std::string dir = root + "/vae";
    write_json(dir + "/config.json", vae_config_json(spec));
    AutoencoderKLWan vae(WanVaeConfig::from_file(dir + "/config.json"));
    write_weights(vae, dir, "diffusion_pytorch_model", component_seed(spec.seed, "vae"), spec.vae_dtype,
                  spec.max_shard_bytes);
  }

  // Into place: the old folder (if replacing) is moved aside first, so the target is never half-written.
  if (fs::exists(target)) {
    OMNI_CHECK_USAGE(overwrite, target.string(), " appeared while the checkpoint was being written; not replacing it");
    const fs::path old = parent / ("." + target.filename().string() + ".old-" + pid);
    fs::remove_all(old, ec);
    fs::rename(target, old, ec);
    OMNI_CHECK(!ec, "cannot move the existing ", target.string(), " aside: ", ec.message());
    fs::rename(tmp.path(), target, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old, target, ignored);  // put the previous checkpoint back
      OMNI_FAIL("cannot rename ", tmp.path().string(), " to ", target.string(), ": ", ec.message());
    }
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp.path(), target, ec);
    OMNI_CHECK(!ec, "cannot rename ", tmp.path().string(), " to ", target.string(), ": ", ec.message());
  }
  tmp.release();
  return target.string();
}

}  // namespace omni::generator
