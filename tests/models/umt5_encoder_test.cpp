// UMT5EncoderModel and the pipeline's prompt embeddings against the reference fixtures (transformers 5.17,
// float32 CPU), plus the module structure HSDP relies on and the loader's errors.
#include "models/umt5_encoder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <vector>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "pipeline/prompt_encoding.h"
#include "text/umt5_tokenizer.h"
#include "text_test_util.h"

namespace omni::models {
namespace {

using omni::pipeline::encode_prompts;
using text::Umt5Tokenizer;
using namespace text_testing;  // fixture paths and tensors, expect_error, TempDir

constexpr double kFloat32Tol = 1e-5;
// bfloat16 weights and activations against the float32 reference, relative to the reference's largest
// magnitude. Measured (LibTorch 1.13 CPU): 0.77e-2 to 1.5e-2 over the three cases, the largest on t2v's
// negative_prompt_embeds (see the printed values).
constexpr double kBFloat16RelTol = 3e-2;

TEST(Umt5Encoder, LastHiddenStateMatchesFixtureFloat32) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const auto encoder = Umt5Encoder::load(text_encoder_dir(name), at::kFloat);
    const auto ids = expected(name, "prompt.input_ids");
    const auto mask = expected(name, "prompt.attention_mask");
    const auto ref = expected(name, "prompt.last_hidden_state");
    const auto out = encoder->forward(ids, mask);
    ASSERT_EQ(out.sizes(), ref.sizes());
    EXPECT_EQ(out.scalar_type(), at::kFloat);
    const double err = max_abs_err(out, ref);
    std::printf("[%s] last_hidden_state float32: max abs err %.3g (|ref| max %.3g)\n", name, err,
                ref.abs().max().item<double>());
    EXPECT_LT(err, kFloat32Tol);
  }
}

TEST(Umt5Encoder, PromptEmbedsMatchFixtureFloat32) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const auto cj = case_json(name);
    const int64_t max_len = cj["max_sequence_length"].get<int64_t>();
    const auto tokenizer = Umt5Tokenizer::from_dir(tokenizer_dir(name));
    const auto encoder = Umt5Encoder::load(text_encoder_dir(name), at::kFloat);
    // Prompt and negative prompt in one batch: rows with different true lengths and masks.
    const auto embeds =
        encode_prompts(tokenizer, *encoder, {cj["prompt"].get<std::string>(), cj["negative_prompt"].get<std::string>()},
                       max_len, at::kFloat);
    ASSERT_EQ(embeds.sizes(), (std::vector<int64_t>{2, max_len, encoder->config().d_model}));
    const auto ref_pos = expected(name, "prompt_embeds");
    const auto ref_neg = expected(name, "negative_prompt_embeds");
    const double err_pos = max_abs_err(embeds.slice(0, 0, 1), ref_pos);
    const double err_neg = max_abs_err(embeds.slice(0, 1, 2), ref_neg);
    std::printf("[%s] prompt_embeds float32: max abs err %.3g; negative_prompt_embeds: %.3g\n", name, err_pos, err_neg);
    EXPECT_LT(err_pos, kFloat32Tol);
    EXPECT_LT(err_neg, kFloat32Tol);
    // Rows past the true length are exactly zero, rows before it are not.
    const int64_t neg_len = expected(name, "negative.attention_mask").sum().item<int64_t>();
    ASSERT_LT(neg_len, max_len);
    EXPECT_EQ(embeds[1].slice(0, neg_len).abs().max().item<double>(), 0.0);
    EXPECT_GT(embeds[1][neg_len - 1].abs().max().item<double>(), 0.0);
  }
}

TEST(Umt5Encoder, BFloat16StaysClose) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const auto cj = case_json(name);
    const int64_t max_len = cj["max_sequence_length"].get<int64_t>();
    const auto tokenizer = Umt5Tokenizer::from_dir(tokenizer_dir(name));
    const auto encoder = Umt5Encoder::load(text_encoder_dir(name), at::kBFloat16);
    const auto last = encoder->forward(expected(name, "prompt.input_ids"), expected(name, "prompt.attention_mask"));
    EXPECT_EQ(last.scalar_type(), at::kBFloat16);
    const auto embeds =
        encode_prompts(tokenizer, *encoder, {cj["prompt"].get<std::string>(), cj["negative_prompt"].get<std::string>()},
                       max_len, at::kBFloat16);
    EXPECT_EQ(embeds.scalar_type(), at::kBFloat16);
    const auto ref_last = expected(name, "prompt.last_hidden_state");
    const auto ref_pos = expected(name, "prompt_embeds");
    const auto ref_neg = expected(name, "negative_prompt_embeds");
    const double rel_last = max_abs_err(last, ref_last) / ref_last.abs().max().item<double>();
    const double rel_pos = max_abs_err(embeds.slice(0, 0, 1), ref_pos) / ref_pos.abs().max().item<double>();
    const double rel_neg = max_abs_err(embeds.slice(0, 1, 2), ref_neg) / ref_neg.abs().max().item<double>();
    std::printf(
        "[%s] bfloat16 vs float32 reference, max abs err / max |ref|: last_hidden_state %.3g, "
        "prompt_embeds %.3g, negative_prompt_embeds %.3g\n",
        name, rel_last, rel_pos, rel_neg);
    EXPECT_LT(rel_last, kBFloat16RelTol);
    EXPECT_LT(rel_pos, kBFloat16RelTol);
    EXPECT_LT(rel_neg, kBFloat16RelTol);
  }
}

// --- pieces checked on their own -----------------------------------------------------------------------------

// The bucket rule written out independently in double precision (wan-reference.md): 16 buckets per sign,
// exact below 8, then 8 + floor(log(n/8) / log(128/8) * 8) capped at 15, +16 when the key is after the query.
int64_t reference_bucket(int64_t relative) {
  int64_t bucket = relative > 0 ? 16 : 0;
  const int64_t n = std::abs(relative);
  if (n < 8) return bucket + n;
  const auto large = 8 + static_cast<int64_t>(std::floor(std::log(n / 8.0) / std::log(16.0) * 8.0));
  return bucket + std::min<int64_t>(large, 15);
}

TEST(Umt5Encoder, RelativePositionBuckets) {
  const int64_t len = 300;
  const auto buckets = relative_position_buckets(len, len, 32, 128, at::kCPU);
  ASSERT_EQ(buckets.sizes(), (std::vector<int64_t>{len, len}));
  auto acc = buckets.accessor<int64_t, 2>();
  int64_t mismatches = 0;
  for (int64_t q = 0; q < len; ++q)
    for (int64_t k = 0; k < len; ++k) mismatches += acc[q][k] != reference_bucket(k - q);
  EXPECT_EQ(mismatches, 0);
  // Spot values: same position, one step either way, the log region, and far away.
  EXPECT_EQ(acc[100][100], 0);
  EXPECT_EQ(acc[100][101], 17);
  EXPECT_EQ(acc[100][99], 1);
  EXPECT_EQ(acc[100][108], 24);
  EXPECT_EQ(acc[100][116], 26);  // 8 + floor(log2(2) / 4 * 8) = 10, +16
  EXPECT_EQ(acc[0][299], 31);
  EXPECT_EQ(acc[299][0], 15);
}

TEST(Umt5Encoder, LayerNormAndGeluMirrorTransformers) {
  const auto x = at::linspace(-4.0, 4.0, 64, at::kFloat).view({2, 32});  // [2, 32]
  const auto w = at::linspace(0.5, 1.5, 32, at::kFloat);
  const auto xd = x.to(at::kDouble);
  const auto ln_ref = xd / (xd.pow(2).mean(-1, true) + 1e-6).sqrt() * w.to(at::kDouble);
  EXPECT_LT(max_abs_err(t5_layer_norm(x, w, 1e-6), ln_ref), 1e-6);
  // bfloat16 weight: the normalized value is rounded to bfloat16 before the weight multiplies it.
  const auto ln_bf = t5_layer_norm(x.to(at::kBFloat16), w.to(at::kBFloat16), 1e-6);
  EXPECT_EQ(ln_bf.scalar_type(), at::kBFloat16);
  EXPECT_LT(max_abs_err(ln_bf, ln_ref), 3e-2);
  const auto gelu_ref = 0.5 * xd * (1 + at::tanh(std::sqrt(2 / M_PI) * (xd + 0.044715 * xd.pow(3))));
  EXPECT_LT(max_abs_err(gelu_new(x), gelu_ref), 1e-6);
  const auto mask = at::tensor(std::vector<int64_t>{1, 1, 0});
  const auto ext = extended_attention_mask(mask.unsqueeze(0), at::kFloat);  // [1, 1, 1, 3]
  ASSERT_EQ(ext.sizes(), (std::vector<int64_t>{1, 1, 1, 3}));
  EXPECT_EQ(ext[0][0][0][0].item<float>(), 0.0f);
  EXPECT_EQ(ext[0][0][0][2].item<float>(), std::numeric_limits<float>::lowest());
}

struct RecordingHooks : UnitHooks {
  std::vector<std::string> calls;
  void before(int unit) override { calls.push_back("before " + std::to_string(unit)); }
  void after(int unit) override { calls.push_back("after " + std::to_string(unit)); }
};

TEST(Umt5Encoder, StructureAndHooksForHsdp) {
  const std::string dir = text_encoder_dir("t2v-a14b-tiny");
  const auto encoder = Umt5Encoder::load(dir, at::kFloat);
  ASSERT_EQ(encoder->num_blocks(), 2);
  // Root unit plus blocks (with their prefixes) cover exactly the checkpoint's tensor names.
  std::set<std::string> names;
  for (const auto& p : encoder->root_parameters()) names.insert(p.name);
  EXPECT_EQ(names, (std::set<std::string>{"shared.weight", "encoder.final_layer_norm.weight"}));
  for (int i = 0; i < encoder->num_blocks(); ++i) {
    const auto params = encoder->block(i).parameters();
    EXPECT_EQ(params.size(), 10u);
    for (const auto& p : params) EXPECT_TRUE(names.insert(encoder->block_prefix(i) + p.name).second) << p.name;
  }
  const auto ckpt = io::Checkpoint::open(dir);
  EXPECT_EQ(names, std::set<std::string>(ckpt.names().begin(), ckpt.names().end()));

  RecordingHooks hooks;
  encoder->forward(expected("t2v-a14b-tiny", "prompt.input_ids"), expected("t2v-a14b-tiny", "prompt.attention_mask"),
                   &hooks);
  EXPECT_EQ(hooks.calls,
            (std::vector<std::string>{"before -1", "before 0", "after 0", "before 1", "after 1", "after -1"}));
}

TEST(Umt5Encoder, Float16KeepsWoInFloat32LikeTransformers) {
  const auto config = Umt5Config::from_json(text_encoder_dir("t2v-a14b-tiny") + "/config.json");
  for (auto dtype : {at::kHalf, at::kBFloat16, at::kFloat}) {
    Umt5Encoder encoder(config, dtype);
    for (const auto& p : encoder.parameters()) {
      const bool is_wo = p.name.find("DenseReluDense.wo.weight") != std::string::npos;
      const auto want = is_wo && dtype == at::kHalf ? at::kFloat : dtype;
      EXPECT_EQ(resolve_param_dtype(p.dtype_rule, dtype), want) << p.name << " under " << at::toString(dtype);
    }
  }
}

// --- checkpoints with other embedding names, and broken ones ---------------------------------------------------

// Copies the t2v text encoder into `dir` as model.safetensors, with `edit` applied to the tensor list.
void write_variant(const std::string& dir,
                   const std::function<void(std::vector<std::pair<std::string, at::Tensor>>&)>& edit) {
  const std::string src = text_encoder_dir("t2v-a14b-tiny");
  const auto ckpt = io::Checkpoint::open(src);
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  for (const auto& n : ckpt.names()) tensors.emplace_back(n, ckpt.read(n));
  edit(tensors);
  io::write_safetensors(dir + "/model.safetensors", tensors);
  ASSERT_EQ(std::system(("cp '" + src + "/config.json' '" + dir + "/'").c_str()), 0);
}

TEST(Umt5Encoder, TiedEmbeddingUnderEitherName) {
  const auto ids = expected("t2v-a14b-tiny", "prompt.input_ids");
  const auto mask = expected("t2v-a14b-tiny", "prompt.attention_mask");
  const auto ref = expected("t2v-a14b-tiny", "prompt.last_hidden_state");
  {
    // Only encoder.embed_tokens.weight: read under that name.
    text_testing::TempDir dir;
    write_variant(dir / "", [](auto& t) {
      for (auto& [name, _] : t)
        if (name == "shared.weight") name = "encoder.embed_tokens.weight";
    });
    const auto encoder = Umt5Encoder::load(dir / "", at::kFloat);
    EXPECT_LT(max_abs_err(encoder->forward(ids, mask), ref), kFloat32Tol);
  }
  {
    // Both: shared.weight is the embedding (transformers' tying keeps it); a different copy is ignored.
    text_testing::TempDir dir;
    write_variant(dir / "", [](auto& t) {
      at::Tensor shared;
      for (auto& [name, tensor] : t)
        if (name == "shared.weight") shared = tensor;
      t.emplace_back("encoder.embed_tokens.weight", at::zeros_like(shared));
    });
    const auto encoder = Umt5Encoder::load(dir / "", at::kFloat);
    EXPECT_LT(max_abs_err(encoder->forward(ids, mask), ref), kFloat32Tol);
  }
}

TEST(Umt5Encoder, MissingTensorFailsNamingIt) {
  text_testing::TempDir dir;
  const std::string missing = "encoder.block.1.layer.1.DenseReluDense.wo.weight";
  write_variant(dir / "", [&](auto& t) {
    t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& e) { return e.first == missing; }), t.end());
  });
  expect_error([&] { Umt5Encoder::load(dir / "", at::kFloat); }, ExitCode::kInput, {missing, "missing"});
}

TEST(Umt5Encoder, BadConfigIsAnInputErrorNamingTheKey) {
  text_testing::TempDir dir;
  std::ofstream(dir / "config.json") << R"({"vocab_size": 160, "d_model": 32, "d_kv": 8, "d_ff": 64,
      "num_layers": 2, "num_heads": 4, "feed_forward_proj": "relu"})";
  expect_error([&] { Umt5Config::from_json(dir / "config.json"); }, ExitCode::kInput, {"feed_forward_proj", "relu"});
  std::ofstream(dir / "config2.json") << R"({"vocab_size": 160, "d_model": 32, "d_kv": 8, "d_ff": 64, "num_heads": 4})";
  expect_error([&] { Umt5Config::from_json(dir / "config2.json"); }, ExitCode::kInput, {"config2.json", "num_layers"});
  std::ofstream(dir / "config3.json") << R"({"vocab_size": 160, "d_model": 32, "d_kv": 8, "d_ff": 64,
      "num_layers": 2, "num_heads": 4, "torch_dtype": "int8"})";
  expect_error([&] { Umt5Config::from_json(dir / "config3.json"); }, ExitCode::kInput, {"config3.json", "torch_dtype"});
}

// The text encoder config as transformers 4.51 writes it (torch_dtype where 5.x writes dtype,
// transformers_version, _name_or_path) reads as the 5.x file does; a key of a newer release is named once.
TEST(Umt5Encoder, ConfigAsTransformers4WritesIt) {
  const std::string path = text_encoder_dir("t2v-a14b-tiny") + "/config.json";
  nlohmann::json j = io::read_json(path);
  ASSERT_TRUE(j.contains("dtype"));
  j.erase("dtype");
  j["torch_dtype"] = "bfloat16";
  j["transformers_version"] = "4.51.3";
  j["_name_or_path"] = "google/umt5-xxl";
  j["added_by_a_newer_release"] = true;
  text_testing::TempDir dir;
  std::ofstream(dir / "config.json") << j.dump(2);
  ::testing::internal::CaptureStderr();
  const Umt5Config old = Umt5Config::from_json(dir / "config.json");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(
      err.find("config.json: ignoring key 'added_by_a_newer_release', unknown to omni-generate's UMT5EncoderModel"),
      std::string::npos)
      << err;
  const Umt5Config now = Umt5Config::from_json(path);
  EXPECT_EQ(old.vocab_size, now.vocab_size);
  EXPECT_EQ(old.d_model, now.d_model);
  EXPECT_EQ(old.num_layers, now.num_layers);
  EXPECT_EQ(old.relative_attention_num_buckets, now.relative_attention_num_buckets);
  EXPECT_EQ(old.layer_norm_epsilon, now.layer_norm_epsilon);
}

}  // namespace
}  // namespace omni::models
