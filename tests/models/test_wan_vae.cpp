// AutoencoderKLWan against diffusers' outputs on the tiny checkpoints (tests/data/reference/<case>/):
// Wan2.1 VAE (t2v, i2v) and Wan2.2 VAE (ti2v), encode and decode, float32 and bfloat16, the pipelines'
// latent normalization, and the loader's rejection of bad checkpoints and configs.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint_edit.h"
#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/autoencoder_kl_wan.h"
#include "tensor_check.h"

namespace fs = std::filesystem;
using omni::models::AutoencoderKLWan;
using omni::models::WanVaeConfig;

namespace {

std::string case_dir(const std::string& name) {
  return std::string(OMNI_TEST_DATA_DIR) + "/reference/" + name;
}
std::string vae_dir(const std::string& name) {
  return case_dir(name) + "/model/vae";
}

at::Tensor fixture(const std::string& name, const std::string& key) {
  omni::io::SafetensorsFile file(case_dir(name) + "/expected.safetensors");
  return file.read(key, at::kFloat);
}

using omni::test_util::max_abs_err;

// Loads each case's VAE once per dtype (the tiny models take milliseconds, but parsing adds up).
const AutoencoderKLWan& vae(const std::string& name, at::ScalarType dtype) {
  // The tiny models gain nothing from threads, and spinning OpenMP workers on a shared CI machine cost ~20x.
  at::set_num_threads(1);
  static std::map<std::pair<std::string, int>, std::unique_ptr<AutoencoderKLWan>> cache;
  auto& slot = cache[{name, static_cast<int>(dtype)}];
  if (!slot) slot = AutoencoderKLWan::load(vae_dir(name), dtype);
  return *slot;
}

struct Pair {
  std::string name;
  const char* in;
  const char* out;
  bool encode;
};

void check_pair(const Pair& p, at::ScalarType dtype, double tolerance) {
  const auto& model = vae(p.name, dtype);
  at::Tensor in = fixture(p.name, p.in);
  at::Tensor expected = fixture(p.name, p.out);
  at::Tensor got = p.encode ? model.encode(in) : model.decode(in);
  EXPECT_EQ(got.scalar_type(), dtype);
  const double err = max_abs_err(got, expected);
  std::printf("[ %s %s -> %s (%s) ] max abs error %.3e (tolerance %.0e)\n", p.name.c_str(), p.in, p.out,
              dtype == at::kFloat ? "float32" : "bfloat16", err, tolerance);
  EXPECT_LE(err, tolerance) << p.name << " " << p.out;
}

const std::vector<Pair>& all_pairs() {
  static const std::vector<Pair> pairs = {
      {"t2v-a14b-tiny", "unit.vae.decode_in", "unit.vae.decode_out", false},
      {"t2v-a14b-tiny", "vae_decode.in", "vae_decode.out", false},
      {"t2v-a14b-tiny", "unit.vae.encode_in", "unit.vae.encode_mean", true},
      {"i2v-a14b-tiny", "unit.vae.decode_in", "unit.vae.decode_out", false},
      {"i2v-a14b-tiny", "vae_decode.in", "vae_decode.out", false},
      {"i2v-a14b-tiny", "unit.vae.encode_in", "unit.vae.encode_mean", true},
      {"i2v-a14b-tiny", "vae_encode.in", "vae_encode.mean", true},
      {"ti2v-5b-tiny", "unit.vae.decode_in", "unit.vae.decode_out", false},
      {"ti2v-5b-tiny", "vae_decode.in", "vae_decode.out", false},
      {"ti2v-5b-tiny", "unit.vae.encode_in", "unit.vae.encode_mean", true},
  };
  return pairs;
}

TEST(WanVae, Float32MatchesDiffusers) {
  for (const auto& p : all_pairs()) check_pair(p, at::kFloat, 1e-4);
}

// bfloat16 against the float32 reference, within bounds derived from the arithmetic of the machine the test
// runs on rather than fitted to one machine (bfloat16 convolutions accumulate differently with and without
// AVX512-BF16: an AMD EPYC without it gave 5x the encode error of an Intel machine with it).
//
// A bfloat16 network rounds its weights to 8 significant bits (2^-9 relative) and each convolution's output
// too, after an accumulation whose own error depends on the kernel: `conv_error` measures that here, as the
// relative difference between this machine's bfloat16 Conv3d and a float32 Conv3d of the same (rounded)
// operands. Each convolution stage then adds at most (2^-9 + conv_error) of the magnitude flowing through
// it, the RMS norms keep magnitudes from growing, and over `stages` stages the errors add up at most
// linearly: error <= stages x (2^-9 + conv_error) x magnitude. `stages` is counted from the model itself.
double conv_error() {
  static const double e = [] {
    auto gen = at::detail::createCPUGenerator(7);
    auto x = at::randn({1, 32, 4, 16, 16}, gen).to(at::kBFloat16);  // [B, C, T, H, W]
    auto w = (at::randn({32, 32, 3, 3, 3}, gen) / std::sqrt(32.0 * 27)).to(at::kBFloat16);
    auto got = at::conv3d(x, w, {}, 1, 1).to(at::kFloat);
    auto exact = at::conv3d(x.to(at::kFloat), w.to(at::kFloat), {}, 1, 1);
    return ((got - exact).abs().max() / exact.abs().max()).item<double>();
  }();
  return e;
}

int64_t conv_stages(const AutoencoderKLWan& model, const std::string& prefix) {
  int64_t n = 0;
  for (const auto& p : model.parameters())
    if (p.name.rfind(prefix, 0) == 0 && p.shape.size() == 5) ++n;
  return n;
}

double arithmetic_bound(const AutoencoderKLWan& model, const std::string& prefix, double magnitude) {
  return static_cast<double>(conv_stages(model, prefix)) * (std::ldexp(1.0, -9) + conv_error()) * magnitude;
}

TEST(WanVae, BFloat16EncodeWithinTheArithmeticBound) {
  std::printf("this machine's bfloat16 Conv3d: relative error %.3e against float32\n", conv_error());
  for (const auto& p : all_pairs()) {
    if (!p.encode || p.in != std::string("unit.vae.encode_in")) continue;
    const auto& model = vae(p.name, at::kBFloat16);
    const at::Tensor expected = fixture(p.name, p.out);
    const double bound = arithmetic_bound(model, "encoder.", expected.abs().max().item<double>());
    const double err = max_abs_err(model.encode(fixture(p.name, p.in)), expected);
    std::printf("[ %s encode (bfloat16) ] max abs error %.3e (bound %.3e: %ld encoder convolutions)\n", p.name.c_str(),
                err, bound, static_cast<long>(conv_stages(model, "encoder.")));
    EXPECT_LE(err, bound) << p.name;
  }
}

// Causal decoding: latent frame 0 alone yields exactly output frame 0 of the whole clip; per pixel within the
// decoder's bound.
TEST(WanVae, BFloat16DecodeFirstFrameWithinTheArithmeticBound) {
  for (const char* name : {"t2v-a14b-tiny", "ti2v-5b-tiny"}) {
    const auto& model = vae(name, at::kBFloat16);
    at::Tensor got = model.decode(fixture(name, "unit.vae.decode_in").narrow(2, 0, 1));
    at::Tensor expected = fixture(name, "unit.vae.decode_out").narrow(2, 0, 1);
    EXPECT_EQ(got.scalar_type(), at::kBFloat16);
    const double bound = arithmetic_bound(model, "decoder.", expected.abs().max().item<double>());
    const double err = max_abs_err(got, expected);
    std::printf("[ %s first latent frame (bfloat16) ] max abs error %.3e (bound %.3e)\n", name, err, bound);
    EXPECT_LE(err, bound) << name;
  }
}

// The whole clips: these tiny random decoders are chaotic along time (3 channels per RMS norm, errors
// compound through the frame cache: a float32 decode of the i2v latents merely rounded to bfloat16 moves a
// pixel by 0.37), so the per-stage bound does not hold per pixel over whole clips. What is checked: the mean
// error within the decoder's bound on the largest magnitude (the frame cache carries errors from frame to
// frame, which the per-pixel mean averages, not the largest value).
TEST(WanVae, BFloat16DecodeClipMeanErrorWithinTheArithmeticBound) {
  for (const char* name : {"t2v-a14b-tiny", "i2v-a14b-tiny", "ti2v-5b-tiny"}) {
    const auto& model = vae(name, at::kBFloat16);
    at::Tensor expected = fixture(name, "unit.vae.decode_out");
    at::Tensor diff = (model.decode(fixture(name, "unit.vae.decode_in")).to(at::kFloat) - expected).abs();
    const double mean = diff.mean().item<double>(), max = diff.max().item<double>();
    const double bound = arithmetic_bound(model, "decoder.", expected.abs().max().item<double>());
    std::printf("[ %s whole clip (bfloat16) ] mean abs error %.3e (bound %.3e), max %.3e\n", name, mean, bound, max);
    EXPECT_LE(mean, bound) << name;
  }
}

// A batch decodes and encodes like its items one by one (the reshapes carry the batch axis).
TEST(WanVae, BatchMatchesItems) {
  for (const char* name : {"t2v-a14b-tiny", "ti2v-5b-tiny"}) {
    const auto& model = vae(name, at::kFloat);
    at::Tensor z = at::cat({fixture(name, "unit.vae.decode_in"), fixture(name, "vae_decode.in")}, 0);
    at::Tensor expected = at::cat({fixture(name, "unit.vae.decode_out"), fixture(name, "vae_decode.out")}, 0);
    double err = max_abs_err(model.decode(z), expected);
    std::printf("[ %s batch-2 decode ] max abs error %.3e\n", name, err);
    EXPECT_LE(err, 1e-4);
    at::Tensor video = fixture(name, "unit.vae.encode_in");
    at::Tensor mean = fixture(name, "unit.vae.encode_mean");
    at::Tensor flipped = video.flip({3});
    at::Tensor both = model.encode(at::cat({video, flipped}, 0));
    err = max_abs_err(both.narrow(0, 0, 1), mean);
    err = std::max(err, max_abs_err(both.narrow(0, 1, 1), model.encode(flipped)));
    std::printf("[ %s batch-2 encode ] max abs error %.3e\n", name, err);
    EXPECT_LE(err, 1e-4);
  }
}

TEST(WanVae, ConfigsAndParameterNames) {
  const auto& v21 = vae("t2v-a14b-tiny", at::kFloat).config();
  EXPECT_EQ(v21.z_dim, 16);
  EXPECT_FALSE(v21.is_residual);
  EXPECT_EQ(v21.patch(), 1);
  EXPECT_EQ(v21.scale_factor_spatial, 8);
  const auto& v22 = vae("ti2v-5b-tiny", at::kFloat).config();
  EXPECT_EQ(v22.z_dim, 48);
  EXPECT_TRUE(v22.is_residual);
  EXPECT_EQ(v22.patch(), 2);
  EXPECT_EQ(v22.video_channels(), 3);
  EXPECT_EQ(v22.scale_factor_spatial, 16);
  EXPECT_EQ(v22.scale_factor_temporal, 4);
  // Every parameter is held in the model dtype (no float32 islands in the VAE).
  for (const auto& p : vae("ti2v-5b-tiny", at::kBFloat16).parameters()) {
    ASSERT_EQ(p.tensor->scalar_type(), at::kBFloat16) << p.name;
  }
}

TEST(WanVae, PatchifyRoundTripAndLayout) {
  at::Tensor x = at::arange(2 * 3 * 2 * 4 * 6, at::kFloat).view({2, 3, 2, 4, 6});
  at::Tensor p = omni::models::wan_patchify(x, 2);
  ASSERT_EQ(p.sizes(), at::IntArrayRef({2, 12, 2, 2, 3}));
  // Channel c*4 + w_offset*2 + h_offset holds pixel (2i + h_offset, 2j + w_offset) of channel c.
  EXPECT_EQ(p[1][1 * 4 + 1 * 2 + 0][1][1][2].item<float>(), x[1][1][1][2][5].item<float>());
  EXPECT_EQ(p[0][2 * 4 + 0 * 2 + 1][0][0][1].item<float>(), x[0][2][0][1][2].item<float>());
  EXPECT_TRUE(at::equal(omni::models::wan_unpatchify(p, 2), x));
}

// The pipelines' normalization: the i2v condition latents fed to the transformer (channels 20..35 of the
// first call) are normalize(vae_encode.mean); the decoder input is denormalize(final latents).
TEST(WanVae, LatentNormalizationMatchesPipelines) {
  const auto& model = vae("i2v-a14b-tiny", at::kFloat);
  at::Tensor cond = fixture("i2v-a14b-tiny", "call00.hidden_states").narrow(1, 20, 16);
  double err = max_abs_err(model.normalize_latents(fixture("i2v-a14b-tiny", "vae_encode.mean")), cond);
  std::printf("[ i2v normalize(vae_encode.mean) vs call00 condition ] max abs error %.3e\n", err);
  EXPECT_LE(err, 1e-6);
  for (const char* name : {"t2v-a14b-tiny", "i2v-a14b-tiny"}) {
    const auto& m = vae(name, at::kFloat);
    at::Tensor final_latents = fixture(name, "step05.latents");
    err = max_abs_err(m.denormalize_latents(final_latents), fixture(name, "vae_decode.in"));
    std::printf("[ %s denormalize(step05.latents) vs vae_decode.in ] max abs error %.3e\n", name, err);
    EXPECT_LE(err, 1e-6);
    // Independent check against the plain formula.
    at::Tensor plain = final_latents * m.latents_std() + m.latents_mean();
    EXPECT_LE(max_abs_err(m.denormalize_latents(final_latents), plain), 1e-5);
    EXPECT_LE(max_abs_err(m.normalize_latents(m.denormalize_latents(final_latents)), final_latents), 1e-5);
  }
}

// A copy of a case's VAE folder whose checkpoint has been edited by `edit`.
std::string edited_vae(const std::string& name, const std::string& tag,
                       const std::function<void(omni::test_util::TensorList&)>& edit) {
  fs::path dir = fs::temp_directory_path() / ("omni_test_vae_" + tag + "_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  omni::test_util::write_edited_component(vae_dir(name), dir.string(), edit);
  return dir.string();
}

void expect_load_error(const std::string& dir, const std::vector<std::string>& needles) {
  try {
    AutoencoderKLWan::load(dir, at::kFloat);
    ADD_FAILURE() << "loading " << dir << " did not fail";
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.exit_code(), 3) << e.what();
    for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    std::printf("[ expected error ] %s\n", e.what());
  }
  fs::remove_all(dir);
}

TEST(WanVae, CheckpointMissingTensorIsNamed) {
  const std::string victim = "decoder.up_blocks.1.resnets.0.conv_shortcut.weight";
  auto dir = edited_vae("t2v-a14b-tiny", "missing", [&](auto& t) {
    t.erase(std::remove_if(t.begin(), t.end(), [&](const auto& e) { return e.first == victim; }), t.end());
  });
  expect_load_error(dir, {victim, "diffusion_pytorch_model.safetensors", "missing"});
}

TEST(WanVae, CheckpointExtraTensorIsNamed) {
  const std::string extra = "decoder.mid_block.attentions.0.norm.bias";
  auto dir = edited_vae("ti2v-5b-tiny", "extra", [&](auto& t) { t.emplace_back(extra, at::zeros({3, 1, 1})); });
  expect_load_error(dir, {extra, "diffusion_pytorch_model.safetensors", "unexpected"});
}

TEST(WanVae, CheckpointWrongShapeIsNamed) {
  const std::string victim = "encoder.down_blocks.3.time_conv.weight";
  auto dir = edited_vae("t2v-a14b-tiny", "shape", [&](auto& t) {
    for (auto& e : t) {
      if (e.first == victim) e.second = at::zeros({3, 3, 2, 1, 1});
    }
  });
  expect_load_error(dir, {victim, "diffusion_pytorch_model.safetensors", "[3, 3, 2, 1, 1]", "[3, 3, 3, 1, 1]"});
}

void expect_config_error(const nlohmann::json& j, const std::string& needle) {
  try {
    WanVaeConfig::from_json(j, "vae/config.json");
    ADD_FAILURE() << "config did not fail: " << j.dump();
  } catch (const omni::Error& e) {
    EXPECT_EQ(e.exit_code(), 3) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("vae/config.json"), std::string::npos) << e.what();
  }
}

TEST(WanVae, ConfigErrorsNameTheKey) {
  const auto base = omni::io::read_json(vae_dir("ti2v-5b-tiny") + "/config.json");
  EXPECT_NO_THROW(WanVaeConfig::from_json(base, "vae/config.json"));
  // clip_output, as the published Wan2.2 Diffusers VAE configs carry it, is ignored like any unknown key
  // (diffusers 0.40 does the same): the same config, and one warning line naming it.
  auto j = base;
  for (bool clip : {false, true}) {
    j["clip_output"] = clip;
    ::testing::internal::CaptureStderr();
    const WanVaeConfig with_clip =
        WanVaeConfig::from_json(j, clip ? "vae-clip-true/config.json" : "vae-clip-false/config.json");
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("config.json: ignoring key 'clip_output'"), std::string::npos) << err;
    const WanVaeConfig plain = WanVaeConfig::from_json(base, "vae/config.json");
    EXPECT_EQ(with_clip.latents_mean, plain.latents_mean);
    EXPECT_EQ(with_clip.dim_mult, plain.dim_mult);
    EXPECT_EQ(with_clip.scale_factor_spatial, plain.scale_factor_spatial);
  }
  j = base;
  j["attn_scales"] = {0.5};
  expect_config_error(j, "attn_scales");
  j = base;
  j["scale_factor_spatial"] = 8;
  expect_config_error(j, "scale_factor_spatial");
  j = base;
  j["latents_std"] = {1.0, 2.0};
  expect_config_error(j, "latents_std");
  j = base;
  j["_class_name"] = "AutoencoderKL";
  expect_config_error(j, "_class_name");
  j = base;
  j["z_dim"] = "48";
  expect_config_error(j, "z_dim");
  // Missing keys take diffusers' defaults (the Wan2.1 VAE).
  WanVaeConfig defaults = WanVaeConfig::from_json(nlohmann::json::object(), "vae/config.json");
  EXPECT_EQ(defaults.base_dim, 96);
  EXPECT_EQ(defaults.z_dim, 16);
  EXPECT_EQ(defaults.latents_std.size(), 16u);
  EXPECT_EQ(defaults.scale_factor_spatial, 8);
}

// Construction from a config alone registers exactly the checkpoint's names and shapes (what a checkpoint
// generator relies on), for the real Wan2.1 and Wan2.2 sizes too.
TEST(WanVae, ConstructionWithoutLoading) {
  for (const char* name : {"t2v-a14b-tiny", "ti2v-5b-tiny"}) {
    AutoencoderKLWan model(WanVaeConfig::from_file(vae_dir(name) + "/config.json"));
    auto ckpt = omni::io::Checkpoint::open(vae_dir(name));
    EXPECT_NO_THROW(omni::models::check_state(model.parameters(), ckpt));
    for (const auto& p : model.parameters()) EXPECT_FALSE(p.tensor->defined()) << p.name;
  }
  nlohmann::json wan22 = {{"base_dim", 160},
                          {"decoder_base_dim", 256},
                          {"z_dim", 48},
                          {"in_channels", 12},
                          {"out_channels", 12},
                          {"is_residual", true},
                          {"patch_size", 2},
                          {"scale_factor_spatial", 16},
                          {"latents_mean", std::vector<double>(48, 0.0)},
                          {"latents_std", std::vector<double>(48, 1.0)}};
  AutoencoderKLWan big(WanVaeConfig::from_json(wan22, "wan2.2"));
  int64_t numel = 0;
  for (const auto& p : big.parameters()) {
    int64_t n = 1;
    for (auto d : p.shape) n *= d;
    numel += n;
  }
  std::printf("[ Wan2.2 VAE parameters ] %lld\n", static_cast<long long>(numel));
  // The released Wan2.2_VAE.pth holds 2.82 GB of float32: about 705M parameters.
  EXPECT_NEAR(static_cast<double>(numel), 705e6, 7e6);
  AutoencoderKLWan wan21(WanVaeConfig::from_json(nlohmann::json::object(), "wan2.1"));
  numel = 0;
  for (const auto& p : wan21.parameters()) {
    int64_t n = 1;
    for (auto d : p.shape) n *= d;
    numel += n;
  }
  std::printf("[ Wan2.1 VAE parameters ] %lld\n", static_cast<long long>(numel));
  EXPECT_NEAR(static_cast<double>(numel), 127e6, 1.3e6);  // Wan2.1_VAE.pth: 508 MB of float32
}

}  // namespace
