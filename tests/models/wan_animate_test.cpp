// WanAnimateTransformer3DModel (pose patch embedding, motion encoder, face encoder, face adapters, Wan2.1's image
// branch) against diffusers 0.40 (float32 CPU), on the cases tools/reference/animate_cases.py writes
// ($OMNI_ANIMATE_CASES); the face adapter on a rank's share of the tokens; the HSDP units' order; the checks.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "float8_check.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/hsdp_sharding.h"
#include "models/wan_transformer.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::kModelFloat32RelTol;
using test_util::max_abs_err;
using test_util::max_rel_err;

std::string case_dir(const std::string& name) {
  return test_util::reference_cases("OMNI_ANIMATE_CASES", "animate_cases.py") + "/" + name;
}

AnimateInputs inputs_of(const io::SafetensorsFile& io) {
  AnimateInputs a;
  a.pose = io.read("pose_hidden_states");
  a.face_pixels = io.read("face_pixel_values");
  return a;
}

at::Tensor run(const WanTransformer3DModel& model, const io::SafetensorsFile& io, const AnimateInputs& a) {
  return model.forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states"), {},
                       io.read("encoder_hidden_states_image"), at::Tensor(), {}, a);
}

class Animate : public ::testing::TestWithParam<const char*> {};

TEST_P(Animate, EncodersMatchDiffusers) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  ASSERT_TRUE(model->config().is_animate());
  const io::SafetensorsFile io(dir + "/io.safetensors");
  const auto face = io.read("face_pixel_values");  // [B, 3, T, s, s]
  const int64_t batch = face.size(0), frames = face.size(2), size = face.size(3);
  const auto crops = face.permute({0, 2, 1, 3, 4}).reshape({-1, 3, size, size});
  // The motion encoder on all crops at once: per crop the same as diffusers' groups of motion_encoder_batch_size.
  const auto motion = model->motion_encoder()->forward(crops);
  const auto want_motion = io.read("motion");
  ASSERT_EQ(motion.sizes(), want_motion.sizes());
  std::printf("[%s] motion: relative %.3g\n", GetParam(), max_rel_err(motion, want_motion));
  EXPECT_LT(max_rel_err(motion, want_motion), kModelFloat32RelTol);
  const auto tokens = model->face_encoder()->forward(want_motion.view({batch, frames, -1}));
  const auto want_tokens = io.read("face_tokens");
  ASSERT_EQ(tokens.sizes(), want_tokens.sizes());
  std::printf("[%s] face tokens: relative %.3g\n", GetParam(), max_rel_err(tokens, want_tokens));
  EXPECT_LT(max_rel_err(tokens, want_tokens), kModelFloat32RelTol);
}

TEST_P(Animate, OutputMatchesDiffusers) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  const io::SafetensorsFile io(dir + "/io.safetensors");
  const auto want = io.read("output");
  const auto out = run(*model, io, inputs_of(io));
  ASSERT_EQ(out.sizes(), want.sizes());
  const double rel = max_rel_err(out, want);
  std::printf("[%s] output: max abs err %.3g, relative %.3g\n", GetParam(), max_abs_err(out, want), rel);
  EXPECT_LT(rel, kModelFloat32RelTol);
  // The pose and the face reach the output: other pose latents or another face give another output.
  auto other = inputs_of(io);
  other.pose = other.pose.flip(2);
  EXPECT_GT(max_rel_err(run(*model, io, other), want), 100 * kModelFloat32RelTol);
  other = inputs_of(io);
  other.face_pixels = other.face_pixels.flip(2);
  EXPECT_GT(max_rel_err(run(*model, io, other), want), 100 * kModelFloat32RelTol);
  // The motion encoder's grouping of crops changes nothing but kernel batches.
  other = inputs_of(io);
  other.motion_batch = 1;
  EXPECT_LT(max_rel_err(run(*model, io, other), want), kModelFloat32RelTol);
}

TEST_P(Animate, FaceAdapterOnEveryShareOfTheTokens) {
  // Under sequence parallelism a rank's tokens may begin and end inside a latent frame; each share, given its
  // first token, must give the whole sequence's rows (each token attends to its own frame's face tokens).
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  const io::SafetensorsFile io(dir + "/io.safetensors");
  const auto face = io.read("face_tokens");  // [B, F' - 1, N, D]
  const auto frames = at::cat({at::zeros_like(face.narrow(1, 0, 1)), face}, 1);
  const int64_t frame_tokens = 6, seq = frames.size(1) * frame_tokens;  // 4 x 6 latent (2 x 3 tokens a frame)
  const auto x = at::randn({face.size(0), seq, face.size(3)});
  const auto* adapter = model->face_adapter_after(0);
  ASSERT_NE(adapter, nullptr);
  const auto whole = adapter->forward(x, frames, 0, frame_tokens);
  for (const std::vector<int64_t>& cuts : {std::vector<int64_t>{0, 7, 17, seq}, {0, 6, 12, 18, seq}, {0, 1, seq}}) {
    std::vector<at::Tensor> parts;
    for (size_t i = 0; i + 1 < cuts.size(); ++i)
      parts.push_back(adapter->forward(x.narrow(1, cuts[i], cuts[i + 1] - cuts[i]), frames, cuts[i], frame_tokens));
    EXPECT_LT(max_rel_err(at::cat(parts, 1), whole), 1e-6) << "cuts at " << cuts[1];
  }
  // A token attends to its own frame only: another frame's face tokens leave it unchanged. (Fresh tokens, not a
  // shift: the adapter's LayerNorm of the face tokens removes a shift.)
  auto moved = frames.clone();
  moved.select(1, 2).copy_(at::randn_like(moved.select(1, 2)));
  const auto changed = adapter->forward(x, moved, 0, frame_tokens);
  EXPECT_TRUE(at::equal(changed.narrow(1, 0, 2 * frame_tokens), whole.narrow(1, 0, 2 * frame_tokens)));
  EXPECT_GT(
      max_abs_err(changed.narrow(1, 2 * frame_tokens, frame_tokens), whole.narrow(1, 2 * frame_tokens, frame_tokens)),
      1e-3);
}

TEST_P(Animate, HsdpUnitsRunInForwardOrder) {
  const auto model = WanTransformer3DModel::load(case_dir(GetParam()) + "/transformer", at::kFloat);
  const auto units = blocks_of(*model);
  const int inject = static_cast<int>(model->config().inject_face_latents_blocks);
  ASSERT_EQ(model->num_face_adapters(), model->num_blocks() / inject);
  ASSERT_EQ(static_cast<int>(units.size()), model->num_blocks() + model->num_face_adapters());
  int next = 0;
  for (int i = 0; i < model->num_blocks(); ++i) {
    EXPECT_EQ(model->block_unit(i), next);
    EXPECT_EQ(units[next++], &model->block(i));
    const bool adapter = i % inject == 0;
    EXPECT_EQ(model->face_adapter_unit(i), adapter ? next : -1);
    if (adapter) EXPECT_EQ(units[next++], model->face_adapter_after(i));
  }
  // --fp8-layers: the last block is blocks.N-1 although the model has more HSDP units than blocks.
  test_util::expect_last_block_kept(*model, model->num_blocks());
  // The root holds the encoders and the pose embedding, nothing of a block or an adapter.
  bool motion = false;
  for (const auto& p : model->root_parameters()) {
    EXPECT_TRUE(p.name.rfind("blocks.", 0) != 0 && p.name.rfind("face_adapter.", 0) != 0) << p.name;
    motion = motion || p.name == "motion_encoder.motion_synthesis_weight";
  }
  EXPECT_TRUE(motion);
}

TEST_P(Animate, InputsRequiredAndMatched) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  const io::SafetensorsFile io(dir + "/io.safetensors");
  test_util::expect_error([&] { (void)run(*model, io, {}); }, ExitCode::kUsage, {"Animate", "pose latents"});
  auto a = inputs_of(io);
  a.face_pixels = a.face_pixels.narrow(2, 0, 4);  // 4 face frames: 2 latent frames with the reference's, not 4
  test_util::expect_error([&] { (void)run(*model, io, a); }, ExitCode::kUsage, {"4 face frames", "video has 4"});
  a = inputs_of(io);
  a.pose = a.pose.narrow(2, 0, 2);
  test_util::expect_error([&] { (void)run(*model, io, a); }, ExitCode::kUsage, {"pose latents must be"});
}

INSTANTIATE_TEST_SUITE_P(Diffusers, Animate, ::testing::Values("batch2", "size32"));

TEST(AnimateConfig, PublishedKeysAndRefusals) {
  const auto base = io::read_json(case_dir("batch2") + "/transformer/config.json");
  const auto cfg = WanTransformerConfig::from_json(base, "x");
  EXPECT_TRUE(cfg.is_animate());
  EXPECT_EQ(cfg.latent_channels, 16);
  EXPECT_EQ(cfg.motion_encoder_channel_sizes.at("8"), 12);
  EXPECT_EQ(cfg.num_face_adapters(), 2);
  auto refused = [&](nlohmann::json j, std::initializer_list<std::string> parts) {
    test_util::expect_error([&] { (void)WanTransformerConfig::from_json(j, "tf/config.json"); }, ExitCode::kInput,
                            parts);
  };
  auto j = base;
  j["inject_face_latents_blocks"] = 3;
  refused(j, {"tf/config.json", "num_layers", "inject_face_latents_blocks"});
  j = base;
  j["in_channels"] = 34;
  refused(j, {"in_channels", "latent_channels"});
  j = base;
  j["motion_encoder_size"] = 24;
  refused(j, {"motion_encoder_size", "power of two"});
  // latent_channels alone gives in_channels (diffusers' convenience), and out_channels defaults to it.
  j = base;
  j.erase("in_channels");
  j.erase("out_channels");
  const auto derived = WanTransformerConfig::from_json(j, "x");
  EXPECT_EQ(derived.in_channels, 36);
  EXPECT_EQ(derived.out_channels, 16);
}

}  // namespace
}  // namespace omni::models
