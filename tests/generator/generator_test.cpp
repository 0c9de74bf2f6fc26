// The checkpoint generator: its tiny checkpoints have exactly the layout diffusers wrote for the fixtures
// (configs and tensor names, shapes and dtypes), load through our loaders and run through our models, are
// byte-identical for a seed, shard correctly, and the tool's command line works and fails cleanly.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "generator/checkpoint_generator.h"
#include "io/json_file.h"
#include "io/model_dir.h"
#include "io/safetensors.h"
#include "models/autoencoder_kl_wan.h"
#include "models/umt5_encoder.h"
#include "models/wan_transformer.h"
#include "tensor_check.h"
#include "test_util.h"
#include "text/umt5_tokenizer.h"

namespace fs = std::filesystem;
using namespace omni::models;
using omni::text::Umt5Tokenizer;
using namespace omni::generator;

namespace {

const std::string kReference = omni::test_util::reference_dir() + "/";

using omni::test_util::read_file;
using omni::test_util::TempDir;

// Relative paths of every file under `root`, sorted.
std::vector<std::string> list_files(const std::string& root) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(root)) {
    if (e.is_regular_file()) out.push_back(fs::relative(e.path(), root).string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

using omni::test_util::max_abs_err;

bool all_finite(const at::Tensor& t) {
  return at::isfinite(t.to(at::kFloat)).all().item<bool>();
}
double rms(const at::Tensor& t) {
  return t.to(at::kFloat).pow(2).mean().sqrt().item<double>();
}

struct KindCase {
  CheckpointKind kind;
  std::string fixture;
};

const std::vector<KindCase>& kind_cases() {
  static const std::vector<KindCase> cases = {{CheckpointKind::kT2vA14b, "t2v-a14b-tiny"},
                                              {CheckpointKind::kI2vA14b, "i2v-a14b-tiny"},
                                              {CheckpointKind::kTi2v5b, "ti2v-5b-tiny"}};
  return cases;
}

// One generated tiny checkpoint per kind, shared by the tests (generation trains a tokenizer each time).
const std::string& tiny_checkpoint(CheckpointKind kind) {
  static TempDir dir;
  static std::map<CheckpointKind, std::string> made;
  auto it = made.find(kind);
  if (it == made.end()) {
    CheckpointSpec spec = make_preset(kind, "tiny");
    it = made.emplace(kind, generate_checkpoint(spec, dir / kind_name(kind))).first;
  }
  return it->second;
}

// Deterministic inputs for the three models.
struct Outputs {
  std::map<std::string, at::Tensor> transformer;  // by expert name
  at::Tensor video;
  at::Tensor text;
};

Outputs run_components(const std::string& root, at::ScalarType dtype) {
  omni::io::ModelDir md(root);
  auto gen = at::detail::createCPUGenerator(1234);
  const auto f32 = at::TensorOptions().dtype(at::kFloat);
  Outputs out;
  for (const char* name : {"transformer", "transformer_2"}) {
    if (!md.has(name)) continue;
    auto model = WanTransformer3DModel::load(md.component_dir(name), dtype);
    const auto& c = model->config();
    auto x = at::randn({1, c.in_channels, 3, 4, 4}, gen, f32);  // [B, C_in, F, H, W]
    auto ctx = at::randn({1, 8, c.text_dim}, gen, f32);         // [B, L, text_dim]
    auto t = at::full({1}, 500.0, f32);                         // [B]
    out.transformer[name] = model->forward(x, t, ctx).to(at::kFloat);
  }
  {
    auto vae = AutoencoderKLWan::load(md.component_dir("vae"), dtype);
    auto z = at::randn({1, vae->config().z_dim, 2, 2, 2}, gen, f32);  // [B, z, T, h, w]
    out.video = vae->decode(z).to(at::kFloat);
  }
  {
    auto tokenizer = Umt5Tokenizer::from_dir(md.component_dir("tokenizer"));
    auto encoder = Umt5Encoder::load(md.component_dir("text_encoder"), dtype);
    auto batch = tokenizer({"A red fox runs through the city, cinematic lighting."}, 16);
    out.text = encoder->forward(batch.input_ids, batch.attention_mask).to(at::kFloat);
  }
  return out;
}

void expect_usage_error(const std::function<void()>& fn, const std::string& part) {
  omni::test_util::expect_error(fn, omni::ExitCode::kUsage, {part});
}

int run_tool(const std::string& args) {
  const std::string cmd = std::string(OMNI_MAKE_CHECKPOINT) + " " + args + " >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// ---- layout: the tiny preset reproduces what diffusers / transformers wrote for the fixtures ----

class GeneratorKinds : public ::testing::TestWithParam<KindCase> {};

TEST_P(GeneratorKinds, TinyPresetHasTheFixtureLayout) {
  const auto& c = GetParam();
  const std::string ours = tiny_checkpoint(c.kind);
  const std::string theirs = kReference + c.fixture + "/model";
  // Every file of the fixture but tokenizer.json (the fast tokenizer's file, which we do not need).
  std::vector<std::string> expected_files;
  for (const auto& f : list_files(theirs)) {
    if (fs::path(f).filename() != "tokenizer.json") expected_files.push_back(f);
  }
  EXPECT_EQ(list_files(ours), expected_files);

  int configs = 0, tensors = 0;
  for (const auto& f : expected_files) {
    if (fs::path(f).extension() == ".json") {
      EXPECT_EQ(omni::io::read_json(ours + "/" + f), omni::io::read_json(theirs + "/" + f)) << f;
      ++configs;
    } else if (fs::path(f).extension() == ".safetensors") {
      const auto a = omni::io::Checkpoint::open(ours + "/" + f);
      const auto b = omni::io::Checkpoint::open(theirs + "/" + f);
      ASSERT_EQ(a.names(), b.names()) << f;
      for (const auto& name : b.names()) {
        EXPECT_EQ(a.info(name).shape, b.info(name).shape) << f << " " << name;
        EXPECT_EQ(a.info(name).dtype, b.info(name).dtype) << f << " " << name;
        ++tensors;
      }
    }
  }
  std::printf("[ %s ] %d JSON files equal to the fixture's, %d tensors with the fixture's names, shapes, dtypes\n",
              kind_name(c.kind), configs, tensors);
}

TEST_P(GeneratorKinds, RoundTripLoadsAndRuns) {
  const auto& c = GetParam();
  const std::string root = tiny_checkpoint(c.kind);
  omni::io::ModelDir md(root);
  const CheckpointSpec spec = make_preset(c.kind, "tiny");
  EXPECT_EQ(md.index().image_to_video, c.kind == CheckpointKind::kI2vA14b);
  EXPECT_EQ(md.index().expand_timesteps, c.kind == CheckpointKind::kTi2v5b);
  EXPECT_EQ(md.has("transformer_2"), spec.has_transformer_2());
  EXPECT_EQ(md.index().boundary_ratio.has_value(), spec.has_transformer_2());

  const Outputs out = run_components(root, at::kFloat);
  const auto& t = spec.transformer;
  for (const auto& [name, y] : out.transformer) {
    EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, t.out_channels, 3, 4, 4})) << name;
    EXPECT_TRUE(all_finite(y)) << name;
    EXPECT_GT(rms(y), 1e-3) << name;
    std::printf("[ %s ] %s output rms %.4f\n", kind_name(c.kind), name.c_str(), rms(y));
  }
  if (spec.has_transformer_2()) {
    // Two experts from one seed must still be different models.
    const double d = max_abs_err(out.transformer.at("transformer"), out.transformer.at("transformer_2"));
    std::printf("[ %s ] max abs difference between the experts' outputs %.4f\n", kind_name(c.kind), d);
    EXPECT_GT(d, 1e-2);
  }
  const int64_t s = spec.vae.version == 22 ? 16 : 8;
  EXPECT_EQ(out.video.sizes(), (std::vector<int64_t>{1, 3, 5, 2 * s, 2 * s}));
  EXPECT_TRUE(all_finite(out.video));
  EXPECT_LE(out.video.abs().max().item<double>(), 1.0);
  EXPECT_GT(rms(out.video), 1e-3);
  EXPECT_EQ(out.text.sizes(), (std::vector<int64_t>{1, 16, spec.text_encoder.d_model}));
  EXPECT_TRUE(all_finite(out.text));
  EXPECT_GT(rms(out.text), 1e-2);
  std::printf("[ %s ] vae decode rms %.4f, umt5 rms %.4f\n", kind_name(c.kind), rms(out.video), rms(out.text));
}

INSTANTIATE_TEST_SUITE_P(Kinds, GeneratorKinds, ::testing::ValuesIn(kind_cases()), [](const auto& info) {
  std::string n = kind_name(info.param.kind);
  for (auto& ch : n) ch = ch == '-' ? '_' : ch;
  return n;
});

// ---- determinism ----

TEST(Generator, SameSeedSameBytesOtherSeedOtherWeights) {
  TempDir dir;
  CheckpointSpec spec = make_preset(CheckpointKind::kT2vA14b, "tiny");
  spec.seed = 7;
  generate_checkpoint(spec, dir / "a");
  generate_checkpoint(spec, dir / "b");
  spec.seed = 8;
  generate_checkpoint(spec, dir / "c");
  const auto files = list_files(dir / "a");
  ASSERT_EQ(files, list_files(dir / "b"));
  ASSERT_EQ(files, list_files(dir / "c"));
  int weight_files = 0;
  for (const auto& f : files) {
    const std::string a = read_file(dir / "a/" + f);
    EXPECT_EQ(a, read_file(dir / "b/" + f)) << f << " differs between two runs with seed 7";
    if (fs::path(f).extension() == ".safetensors") {
      EXPECT_NE(a, read_file(dir / "c/" + f)) << f << " is the same for seeds 7 and 8";
      ++weight_files;
    } else {
      // Configs and tokenizer do not depend on the seed.
      EXPECT_EQ(a, read_file(dir / "c/" + f)) << f;
    }
  }
  EXPECT_EQ(weight_files, 4);
  const auto a = omni::io::Checkpoint::open(dir / "a/transformer").read("blocks.0.attn1.to_q.weight");
  const auto c = omni::io::Checkpoint::open(dir / "c/transformer").read("blocks.0.attn1.to_q.weight");
  const double d = max_abs_err(a, c);
  std::printf("seed 7 vs 8: blocks.0.attn1.to_q.weight max abs difference %.4f\n", d);
  EXPECT_GT(d, 0.1);
}

// ---- sharding and storage dtype ----

TEST(Generator, ShardedCheckpointMatchesSingleFile) {
  TempDir dir;
  CheckpointSpec spec = make_preset(CheckpointKind::kTi2v5b, "tiny-heads4");
  spec.seed = 3;
  const std::string single = generate_checkpoint(spec, dir / "single");
  spec.max_shard_bytes = 16 * 1024;
  const std::string sharded = generate_checkpoint(spec, dir / "sharded");
  for (const auto& [component, stem] : std::vector<std::pair<std::string, std::string>>{
           {"transformer", "diffusion_pytorch_model"}, {"text_encoder", "model"}, {"vae", "diffusion_pytorch_model"}}) {
    const std::string index = sharded + "/" + component + "/" + stem + ".safetensors.index.json";
    ASSERT_TRUE(fs::exists(index)) << index;
    EXPECT_FALSE(fs::exists(sharded + "/" + component + "/" + stem + ".safetensors"));
    const auto index_json = omni::io::read_json(index);
    std::set<std::string> shards;
    for (const auto& entry : index_json.at("weight_map").items()) shards.insert(entry.value().get<std::string>());
    EXPECT_GT(shards.size(), 1u) << component;
    EXPECT_EQ(omni::io::Checkpoint::open(sharded + "/" + component).names(),
              omni::io::Checkpoint::open(single + "/" + component).names());
    std::printf("%s: %zu shards\n", component.c_str(), shards.size());
  }
  const Outputs a = run_components(single, at::kFloat);
  const Outputs b = run_components(sharded, at::kFloat);
  const double dt = max_abs_err(a.transformer.at("transformer"), b.transformer.at("transformer"));
  const double dv = max_abs_err(a.video, b.video);
  const double de = max_abs_err(a.text, b.text);
  std::printf("sharded vs single file: max abs error transformer %.3g, vae %.3g, umt5 %.3g\n", dt, dv, de);
  EXPECT_EQ(dt, 0.0);
  EXPECT_EQ(dv, 0.0);
  EXPECT_EQ(de, 0.0);
}

TEST(Generator, Bfloat16StorageKeepsFloat32Modules) {
  TempDir dir;
  CheckpointSpec spec = make_preset(CheckpointKind::kT2vA14b, "tiny-heads8");
  const std::string f32_root = generate_checkpoint(spec, dir / "f32");
  spec.dtype = at::kBFloat16;
  const std::string bf16_root = generate_checkpoint(spec, dir / "bf16");
  EXPECT_EQ(omni::io::read_json(bf16_root + "/text_encoder/config.json")["dtype"], "bfloat16");
  EXPECT_EQ(omni::io::read_json(bf16_root + "/transformer/config.json")["num_attention_heads"], 8);

  const auto ckpt = omni::io::Checkpoint::open(bf16_root + "/transformer");
  const auto ref = omni::io::Checkpoint::open(f32_root + "/transformer");
  using omni::io::DType;
  EXPECT_EQ(ckpt.info("blocks.0.attn1.to_q.weight").dtype, DType::BF16);
  EXPECT_EQ(ckpt.info("proj_out.weight").dtype, DType::BF16);
  // diffusers' _keep_in_fp32_modules stay float32 in storage.
  EXPECT_EQ(ckpt.info("scale_shift_table").dtype, DType::F32);
  EXPECT_EQ(ckpt.info("blocks.1.scale_shift_table").dtype, DType::F32);
  EXPECT_EQ(ckpt.info("condition_embedder.time_embedder.linear_1.weight").dtype, DType::F32);
  EXPECT_EQ(ckpt.info("blocks.0.norm2.weight").dtype, DType::F32);
  EXPECT_EQ(omni::io::Checkpoint::open(bf16_root + "/text_encoder").info("shared.weight").dtype, DType::BF16);
  EXPECT_EQ(omni::io::Checkpoint::open(bf16_root + "/vae").info("decoder.conv_in.weight").dtype, DType::F32);
  // The same draws, rounded: bfloat16 storage is the float32 checkpoint converted.
  for (const char* name : {"blocks.0.attn1.to_q.weight", "scale_shift_table"}) {
    const auto got = ckpt.read(name);
    const auto want = ref.read(name).to(got.scalar_type());
    EXPECT_EQ(max_abs_err(got, want), 0.0) << name;
  }
  const Outputs out = run_components(bf16_root, at::kBFloat16);
  for (const auto& [name, y] : out.transformer) EXPECT_TRUE(all_finite(y)) << name;
  EXPECT_TRUE(all_finite(out.video));
  EXPECT_TRUE(all_finite(out.text));
}

// ---- scales: many layers keep activations finite and of modest size ----

TEST(Generator, DeepModelsStayFinite) {
  TempDir dir;
  CheckpointSpec spec = make_preset(CheckpointKind::kT2vA14b, "tiny");
  spec.transformer.num_layers = 40;
  spec.text_encoder.num_layers = 24;
  spec.vae.num_res_blocks = 3;
  const Outputs out = run_components(generate_checkpoint(spec, dir / "deep"), at::kFloat);
  for (const auto& [name, y] : out.transformer) {
    std::printf("40-layer %s output rms %.4f\n", name.c_str(), rms(y));
    EXPECT_TRUE(all_finite(y));
    EXPECT_GT(rms(y), 1e-3);
    EXPECT_LT(rms(y), 1e3);
  }
  std::printf("24-layer umt5 rms %.4f, 3-res-block vae rms %.4f\n", rms(out.text), rms(out.video));
  EXPECT_TRUE(all_finite(out.text));
  EXPECT_LT(rms(out.text), 1e3);
  EXPECT_TRUE(all_finite(out.video));
  EXPECT_GT(rms(out.video), 1e-3);
}

// ---- tokenizer ----

TEST(Generator, TokenizerHasT5Ids) {
  // The processor opened before the trainer (run alone, this test covers that order of the two dlopens).
  const auto fixture_ids =
      Umt5Tokenizer::from_dir(kReference + "t2v-a14b-tiny/model/tokenizer").encode_with_eos("a cat", 8);
  EXPECT_EQ(fixture_ids.back(), 1);
  TempDir dir;
  const std::string path = dir / "spiece.model";
  {
    std::ofstream f(path, std::ios::binary);
    const std::string model = train_tokenizer(128);
    f.write(model.data(), static_cast<std::streamsize>(model.size()));
  }
  Umt5Tokenizer tok(path);
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.eos_id(), 1);
  EXPECT_LE(tok.vocab_size(), 128);
  EXPECT_GE(tok.vocab_size(), 64);
  const auto ids = tok.encode_with_eos("A cat walks on the beach, cinematic lighting.", 64);
  ASSERT_GE(ids.size(), 3u);
  EXPECT_EQ(ids.back(), 1);
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_GE(ids[i], 3) << "position " << i << " is a special id (2 would be unknown)";
    EXPECT_LT(ids[i], tok.vocab_size());
  }
  std::printf("vocab %lld pieces; sentence -> %zu ids\n", static_cast<long long>(tok.vocab_size()), ids.size());
  EXPECT_EQ(train_tokenizer(128), train_tokenizer(128));
}

// ---- folder handling, presets, validation ----

TEST(Generator, RefusesToOverwriteUnlessAsked) {
  TempDir dir;
  const std::string target = dir / "ckpt";
  fs::create_directories(target);
  std::ofstream(target + "/marker") << "keep";
  const CheckpointSpec spec = make_preset(CheckpointKind::kTi2v5b, "tiny");
  expect_usage_error([&] { generate_checkpoint(spec, target); }, "already exists");
  EXPECT_TRUE(fs::exists(target + "/marker"));
  generate_checkpoint(spec, target + "/", /*overwrite=*/true);
  EXPECT_FALSE(fs::exists(target + "/marker"));
  EXPECT_TRUE(fs::exists(target + "/model_index.json"));
  // Nothing left behind next to it: no temporary or displaced folders.
  EXPECT_EQ(list_files(dir.path()).size(), list_files(target).size());
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir.path())) entries.push_back(e.path().filename().string());
  EXPECT_EQ(entries, std::vector<std::string>{"ckpt"});
}

TEST(Generator, PresetsAndValidation) {
  EXPECT_EQ(make_preset(CheckpointKind::kT2vA14b, "tiny-heads4").transformer.num_attention_heads, 4);
  EXPECT_EQ(make_preset(CheckpointKind::kT2vA14b, "tiny-heads8").transformer.num_attention_heads, 8);
  const auto full = make_preset(CheckpointKind::kI2vA14b, "full");
  EXPECT_EQ(full.transformer.num_layers, 40);
  EXPECT_EQ(full.transformer.num_attention_heads * full.transformer.attention_head_dim, 5120);
  EXPECT_EQ(full.transformer.in_channels, 36);
  EXPECT_EQ(full.text_encoder.d_model, 4096);
  EXPECT_EQ(full.text_encoder.vocab_size, 256384);
  const auto full5b = make_preset(CheckpointKind::kTi2v5b, "full");
  EXPECT_EQ(full5b.transformer.num_attention_heads * full5b.transformer.attention_head_dim, 3072);
  EXPECT_EQ(full5b.vae.z_dim, 48);
  for (const auto& kind : {CheckpointKind::kT2vA14b, CheckpointKind::kI2vA14b, CheckpointKind::kTi2v5b}) {
    for (const auto& p : preset_names()) EXPECT_NO_THROW(make_preset(kind, p).validate()) << p;
  }
  expect_usage_error([] { make_preset(CheckpointKind::kT2vA14b, "huge"); }, "huge");
  expect_usage_error([] { parse_kind("t2v"); }, "t2v-a14b");
  auto spec = make_preset(CheckpointKind::kT2vA14b, "tiny");
  spec.transformer.text_dim = 48;
  expect_usage_error([&] { spec.validate(); }, "text_dim");
  spec = make_preset(CheckpointKind::kT2vA14b, "tiny");
  spec.tokenizer_vocab_size = 200;
  expect_usage_error([&] { spec.validate(); }, "tokenizer vocabulary");
  spec = make_preset(CheckpointKind::kI2vA14b, "tiny");
  spec.transformer.in_channels = 16;
  expect_usage_error([&] { spec.validate(); }, "in/out channels");
  set_latent_channels(spec, 16);
  EXPECT_EQ(spec.transformer.in_channels, 36);
  EXPECT_NO_THROW(spec.validate());
  spec.transformer.attention_head_dim = 7;
  expect_usage_error([&] { spec.validate(); }, "even");
}

// The "full" preset's configs, parsed and built by our classes (nothing allocated), have the released models'
// parameter counts: Wan2.2 A14B experts 14.3B each, TI2V-5B 5.0B, UMT5-XXL's encoder 5.7B.
TEST(Generator, FullPresetHasTheReleasedParameterCounts) {
  const auto count = [](const Module& m) {
    int64_t n = 0;
    for (const auto& p : m.parameters()) {
      int64_t k = 1;
      for (int64_t d : p.shape) k *= d;
      n += k;
    }
    return static_cast<double>(n);
  };
  const auto a14b = make_preset(CheckpointKind::kT2vA14b, "full");
  const auto ti2v = make_preset(CheckpointKind::kTi2v5b, "full");
  const double t_a14b = count(
      WanTransformer3DModel(omni::models::WanTransformerConfig::from_json(transformer_config_json(a14b), "full a14b")));
  const double t_5b =
      count(WanTransformer3DModel(omni::models::WanTransformerConfig::from_json(transformer_config_json(ti2v), "5b")));
  TempDir dir;
  { std::ofstream(dir / "config.json") << text_encoder_config_json(a14b).dump(); }
  const double te = count(Umt5Encoder(Umt5Config::from_json(dir / "config.json"), at::kBFloat16));
  const double vae21 = count(AutoencoderKLWan(WanVaeConfig::from_json(vae_config_json(a14b), "vae 2.1")));
  const double vae22 = count(AutoencoderKLWan(WanVaeConfig::from_json(vae_config_json(ti2v), "vae 2.2")));
  std::printf(
      "full preset parameters: A14B expert %.4gB, TI2V-5B %.4gB, UMT5 encoder %.4gB, VAE 2.1 %.4gM, "
      "VAE 2.2 %.4gM\n",
      t_a14b / 1e9, t_5b / 1e9, te / 1e9, vae21 / 1e6, vae22 / 1e6);
  EXPECT_NEAR(t_a14b / 1e9, 14.3, 0.1);
  EXPECT_NEAR(t_5b / 1e9, 5.0, 0.1);
  EXPECT_NEAR(te / 1e9, 5.7, 0.1);
}

// The "small" preset (benchmarks) loads and runs for every kind.
TEST(Generator, SmallPresetRoundTrip) {
  TempDir dir;
  for (const auto& c : kind_cases()) {
    const auto spec = make_preset(c.kind, "small");
    const Outputs out = run_components(generate_checkpoint(spec, dir / kind_name(c.kind)), at::kFloat);
    // The generator's scaled initialisation (weights N(0, 1/fan_in), norm scales ~1) exists so that the small
    // and full presets keep activations near unit size through every block, as trained weights do: a wrong
    // rule shows as an rms many orders of magnitude off (1e-3 or 1e3), which this band rejects.
    auto in_band = [](double v) { return v > 0.05 && v < 20.0; };
    for (const auto& [name, y] : out.transformer) {
      EXPECT_EQ(y.sizes(), (std::vector<int64_t>{1, spec.transformer.out_channels, 3, 4, 4})) << name;
      EXPECT_TRUE(all_finite(y)) << kind_name(c.kind) << " " << name;
      EXPECT_TRUE(in_band(rms(y))) << kind_name(c.kind) << " " << name << " rms " << rms(y);
    }
    EXPECT_EQ(out.video.size(1), 3);
    EXPECT_TRUE(all_finite(out.video)) << kind_name(c.kind);
    EXPECT_TRUE(in_band(rms(out.video))) << kind_name(c.kind) << " vae rms " << rms(out.video);
    EXPECT_TRUE(all_finite(out.text)) << kind_name(c.kind);
    EXPECT_TRUE(in_band(rms(out.text))) << kind_name(c.kind) << " umt5 rms " << rms(out.text);
    std::printf("[ %s small ] transformer rms %.4f, vae rms %.4f, umt5 rms %.4f\n", kind_name(c.kind),
                rms(out.transformer.at("transformer")), rms(out.video), rms(out.text));
  }
}

TEST(Generator, ToolWritesCheckpointsAndRejectsBadUsage) {
  TempDir dir;
  const std::string out = dir / "tool";
  ASSERT_EQ(run_tool("--kind ti2v-5b --preset tiny-heads8 --layers 3 --dtype bfloat16 --max-shard-bytes 30000 "
                     "--seed 5 --output " +
                     out),
            0);
  const auto cfg = omni::io::read_json(out + "/transformer/config.json");
  EXPECT_EQ(cfg["num_attention_heads"], 8);
  EXPECT_EQ(cfg["num_layers"], 3);
  EXPECT_TRUE(fs::exists(out + "/transformer/diffusion_pytorch_model.safetensors.index.json"));
  EXPECT_EQ(omni::io::Checkpoint::open(out + "/transformer").info("blocks.2.attn1.to_q.weight").dtype,
            omni::io::DType::BF16);
  omni::io::ModelDir md(out);
  EXPECT_TRUE(md.index().expand_timesteps);
  // The library with the same spec gives the same bytes as the tool.
  CheckpointSpec spec = make_preset(CheckpointKind::kTi2v5b, "tiny-heads8");
  spec.transformer.num_layers = 3;
  spec.dtype = at::kBFloat16;
  spec.max_shard_bytes = 30000;
  spec.seed = 5;
  const std::string lib = generate_checkpoint(spec, dir / "lib");
  ASSERT_EQ(list_files(lib), list_files(out));
  for (const auto& f : list_files(lib)) EXPECT_EQ(read_file(lib + "/" + f), read_file(out + "/" + f)) << f;

  EXPECT_EQ(run_tool("--kind t2v-a14b --output " + out), 2);  // exists
  EXPECT_EQ(run_tool("--kind t2v --output " + (dir / "x")), 2);
  EXPECT_EQ(run_tool("--kind t2v-a14b --heads 0 --output " + (dir / "x")), 2);
  EXPECT_EQ(run_tool("--kind t2v-a14b --dtype float16 --output " + (dir / "x")), 2);
  EXPECT_EQ(run_tool("--kind t2v-a14b"), 2);  // no --output
  EXPECT_FALSE(fs::exists(dir / "x"));
  EXPECT_EQ(
      run_tool("--kind t2v-a14b --text-d-model 48 --text-d-kv 12 --vocab-size 100 --z-dim 8 --output " + (dir / "x")),
      0);
  EXPECT_EQ(omni::io::read_json(dir / "x/transformer/config.json")["text_dim"], 48);
  EXPECT_EQ(omni::io::read_json(dir / "x/transformer/config.json")["in_channels"], 8);
  EXPECT_EQ(omni::io::read_json(dir / "x/vae/config.json")["z_dim"], 8);
  EXPECT_EQ(run_tool("--kind t2v-a14b --overwrite --output " + (dir / "x")), 0);
  EXPECT_EQ(omni::io::read_json(dir / "x/transformer/config.json")["text_dim"], 32);
}

}  // namespace
