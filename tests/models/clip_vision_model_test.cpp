// The CLIP image encoder and its preprocessing against transformers 5.17 (float32 CPU), on the cases
// tools/reference/clip_cases.py writes ($OMNI_CLIP_CASES): CLIPImageProcessor's pixels (PIL backend) from image
// files as diffusers' load_image reads them, and CLIPVisionModel's hidden states at the real ViT-H/14 width.
#include "models/clip_vision_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "io/clip_image_processor.h"
#include "io/foreign_model.h"
#include "io/image_reader.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::max_abs_err;
using test_util::max_rel_err;

// Hidden states relative to their largest magnitude: float32 with the same operations in the same order as
// transformers except the attention kernel's and GEMM's summation orders.
constexpr double kFloat32RelTol = 1e-5;

std::string cases_dir() {
  return test_util::reference_cases("OMNI_CLIP_CASES", "clip_cases.py");
}

struct Cases {
  std::string dir = cases_dir();
  nlohmann::json index = io::read_json(dir + "/cases.json");
  io::SafetensorsFile expected{dir + "/expected.safetensors"};
  at::Tensor want(const std::string& name) const { return expected.read(name); }
};

TEST(ClipImageProcessor, PixelsEqualTransformers) {
  const Cases cases;
  const auto config = io::ClipImageProcessorConfig::from_json(cases.dir + "/processor/preprocessor_config.json");
  for (const auto& name : cases.index["images"]) {
    SCOPED_TRACE(name.get<std::string>());
    const auto image =
        io::read_image(cases.dir + "/" + cases.index["files"][name.get<std::string>()].get<std::string>());
    const auto pixels = io::clip_preprocess(image, config);
    const auto want = cases.want(name.get<std::string>() + ".pixel_values");
    ASSERT_EQ(pixels.sizes(), want.sizes());
    // The same float32 operations on the same 8-bit pixels: equal, not close.
    const double err = max_abs_err(pixels, want);
    std::printf("[%s] pixel_values: max abs err %.3g\n", name.get<std::string>().c_str(), err);
    EXPECT_EQ(err, 0.0);
  }
}

// Both name layouts (transformers 5's bare names; transformers 4's vision_model.* with visual_projection and
// position_ids, as ComfyUI's clip_vision_h holds) load and give the reference's hidden states.
TEST(ClipVisionModel, HiddenStatesMatchTransformers) {
  const Cases cases;
  for (const char* folder : {"encoder", "encoder_with_projection"}) {
    SCOPED_TRACE(folder);
    const auto model = ClipVisionModel::load(cases.dir + "/" + folder, at::kFloat);
    EXPECT_EQ(model->config().hidden_size, 1280);
    EXPECT_EQ(model->config().prefix, std::string(folder) == "encoder" ? "" : "vision_model.");
    for (const auto& entry : cases.index["images"]) {
      const std::string name = entry.get<std::string>();
      SCOPED_TRACE(name);
      const auto pixels = cases.want(name + ".pixel_values");
      const int64_t layers = model->config().num_hidden_layers;
      const std::pair<const char*, int64_t> states[] = {
          {"hidden_0", 0}, {"hidden_penultimate", layers - 1}, {"hidden_last", layers}};
      for (const auto& [key, index] : states) {
        const auto want = cases.want(name + "." + key);
        const auto got =
            index == layers - 1 ? model->penultimate_hidden_state(pixels) : model->hidden_state(pixels, index);
        ASSERT_EQ(got.sizes(), want.sizes()) << key;
        const double rel = max_rel_err(got, want);
        std::printf("[%s %s] %s: max abs err %.3g, relative %.3g\n", folder, name.c_str(), key, max_abs_err(got, want),
                    rel);
        EXPECT_LT(rel, kFloat32RelTol) << key;
      }
    }
  }
}

// The layers are not the identity: the penultimate state differs from the embeddings and from the last one
// by far more than the tolerance (so the comparisons above could fail).
TEST(ClipVisionModel, StatesDifferFromEachOther) {
  const Cases cases;
  const auto name = cases.index["images"][0].get<std::string>();
  const auto h0 = cases.want(name + ".hidden_0");
  const auto pen = cases.want(name + ".hidden_penultimate");
  const auto last = cases.want(name + ".hidden_last");
  EXPECT_GT(max_rel_err(pen, h0), 100 * kFloat32RelTol);
  EXPECT_GT(max_rel_err(last, pen), 100 * kFloat32RelTol);
}

// A lone file (--image-encoder, as ComfyUI's clip_vision_h.safetensors: vision_model.* names with
// visual_projection and position_ids, no config): the config inferred from the shapes is transformers' own, and the
// model read through it gives transformers' states.
TEST(ClipVisionModel, ConfigInferredFromALoneFile) {
  const Cases cases;
  const std::string file = cases.dir + "/encoder_with_projection/model.safetensors";
  const auto component = io::component_from_file("image_encoder", file, "--image-encoder");
  ASSERT_TRUE(component.config.has_value());
  auto inferred = ClipVisionConfig::from_json(*component.config, component.config_source);
  const auto published = ClipVisionConfig::from_json(cases.dir + "/encoder_with_projection/config.json");
  EXPECT_EQ(inferred.hidden_size, published.hidden_size);
  EXPECT_EQ(inferred.intermediate_size, published.intermediate_size);
  EXPECT_EQ(inferred.num_attention_heads, published.num_attention_heads);
  EXPECT_EQ(inferred.num_hidden_layers, published.num_hidden_layers);
  EXPECT_EQ(inferred.patch_size, published.patch_size);
  EXPECT_EQ(inferred.image_size, published.image_size);
  EXPECT_EQ(inferred.projection_dim, published.projection_dim);
  EXPECT_EQ(inferred.hidden_act, published.hidden_act);
  EXPECT_EQ(inferred.layer_norm_eps, published.layer_norm_eps);
  inferred.resolve_names(*component.opened);
  ClipVisionModel model(inferred, at::kFloat);
  load_state(model, *component.opened, at::kFloat);
  const auto name = cases.index["images"][0].get<std::string>();
  const auto got = model.penultimate_hidden_state(cases.want(name + ".pixel_values"));
  EXPECT_LT(max_rel_err(got, cases.want(name + ".hidden_penultimate")), kFloat32RelTol);
}

TEST(ClipVisionModel, LoneFilesThatCannotBeReadAreRefused) {
  const Cases cases;
  test_util::TempDir dir("clip_lone");
  // open_clip's layout (one fused q/k/v projection per layer) is read (tests/e2e/layouts); a fused projection
  // whose rows are not three equal blocks, and a tower tensor no table names, are refused by name.
  io::write_safetensors(dir / "open_clip.safetensors",
                        {{"visual.conv1.weight", at::zeros({8, 3, 2, 2})},
                         {"visual.transformer.resblocks.0.attn.in_proj_weight", at::zeros({25, 8})}});
  test_util::expect_error(
      [&] { (void)io::component_from_file("image_encoder", dir / "open_clip.safetensors", "--image-encoder"); },
      ExitCode::kInput, {"open_clip.safetensors", "in_proj_weight", "3 equal blocks"});
  io::write_safetensors(dir / "wan.safetensors", {{"visual.transformer.0.attn.to_qkv.weight", at::zeros({24, 8})},
                                                  {"visual.transformer.0.attn.extra.weight", at::zeros({8, 8})}});
  test_util::expect_error(
      [&] { (void)io::component_from_file("image_encoder", dir / "wan.safetensors", "--image-encoder"); },
      ExitCode::kInput, {"wan.safetensors", "visual.transformer.0.attn.extra.weight", "Wan's CLIP"});
  // Another width than ViT-H's: the heads are in no shape.
  const auto narrow = [&] {
    const ClipVisionConfig c = ClipVisionConfig::from_json(nlohmann::json{{"hidden_size", 64},
                                                                          {"intermediate_size", 128},
                                                                          {"num_attention_heads", 4},
                                                                          {"num_hidden_layers", 1},
                                                                          {"image_size", 28},
                                                                          {"patch_size", 14}},
                                                           "narrow");
    ClipVisionModel m(c, at::kFloat);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    for (const auto& p : m.parameters()) tensors.emplace_back(p.name, at::zeros(p.shape));  // vision_model.*
    io::write_safetensors(dir / "narrow.safetensors", tensors);
    (void)io::component_from_file("image_encoder", dir / "narrow.safetensors", "--image-encoder");
  };
  test_util::expect_error(narrow, ExitCode::kInput, {"--image-encoder", "width 64", "ViT-H/14"});
  // Not a CLIP at all.
  io::write_safetensors(dir / "other.safetensors", {{"x.weight", at::zeros({2, 2})}});
  test_util::expect_error(
      [&] { (void)io::component_from_file("image_encoder", dir / "other.safetensors", "--image-encoder"); },
      ExitCode::kInput, {"--image-encoder", "not a CLIP image encoder"});
}

TEST(ClipVisionModel, LoaderErrorsNameTheProblem) {
  const Cases cases;
  test_util::TempDir dir("clip_bad");
  // A config whose width the heads do not divide.
  auto config = io::read_json(cases.dir + "/encoder/config.json");
  config["num_attention_heads"] = 3;
  test_util::write_file(dir / "config.json", config.dump());
  test_util::expect_error([&] { (void)ClipVisionConfig::from_json(dir / "config.json"); }, ExitCode::kInput,
                          {"config.json", "hidden_size", "num_attention_heads"});
  config["num_attention_heads"] = 16;
  config["hidden_act"] = "relu";
  test_util::write_file(dir / "config.json", config.dump());
  test_util::expect_error([&] { (void)ClipVisionConfig::from_json(dir / "config.json"); }, ExitCode::kInput,
                          {"hidden_act", "relu"});
  // A processor size we do not implement.
  auto proc = io::read_json(cases.dir + "/processor/preprocessor_config.json");
  proc["size"] = {{"height", 224}, {"width", 224}};
  test_util::write_file(dir / "preprocessor_config.json", proc.dump());
  test_util::expect_error([&] { (void)io::ClipImageProcessorConfig::from_json(dir / "preprocessor_config.json"); },
                          ExitCode::kInput, {"preprocessor_config.json", "size", "shortest_edge"});
}

}  // namespace
}  // namespace omni::models
