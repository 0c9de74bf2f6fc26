// Wan2.1's CLIP image branch of WanTransformer3DModel (image_embedder, the cross-attention's image key/values,
// FLF2V's image position table) against diffusers 0.40 (float32 CPU), on the cases
// tools/reference/image_branch_cases.py writes ($OMNI_IMAGE_BRANCH_CASES).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"
#include "models/wan_transformer.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::kModelFloat32RelTol;
using test_util::max_abs_err;
using test_util::max_rel_err;

std::string case_dir(const std::string& name) {
  return test_util::reference_cases("OMNI_IMAGE_BRANCH_CASES", "image_branch_cases.py") + "/" + name;
}

class ImageBranch : public ::testing::TestWithParam<const char*> {};

TEST_P(ImageBranch, OutputMatchesDiffusers) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  ASSERT_TRUE(model->config().has_image_branch());
  const io::SafetensorsFile io(dir + "/io.safetensors");
  const auto image = io.read("encoder_hidden_states_image");
  const auto out =
      model->forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states"), {}, image);
  const auto want = io.read("output");
  ASSERT_EQ(out.sizes(), want.sizes());
  const double rel = max_rel_err(out, want);
  std::printf("[%s] output: max abs err %.3g, relative %.3g\n", GetParam(), max_abs_err(out, want), rel);
  EXPECT_LT(rel, kModelFloat32RelTol);
  // The image values of block 0 alone move the output by far more than the tolerance.
  EXPECT_GT(max_rel_err(io.read("output_without_block0_image_values"), want), 100 * kModelFloat32RelTol);
}

TEST_P(ImageBranch, ImageStatesRequiredAndRefused) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  const io::SafetensorsFile io(dir + "/io.safetensors");
  test_util::expect_error(
      [&] { (void)model->forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states")); },
      ExitCode::kUsage, {"CLIP image states"});
}

INSTANTIATE_TEST_SUITE_P(Wan21, ImageBranch, ::testing::Values("i2v", "flf2v"));

TEST(ImageBranchConfig, PiecesThatDoNotFitAreRefused) {
  auto base = io::read_json(case_dir("flf2v") + "/transformer/config.json");
  const auto cfg = WanTransformerConfig::from_json(base, "x");
  EXPECT_EQ(cfg.image_dim, 32);
  EXPECT_EQ(cfg.added_kv_proj_dim, 24);
  EXPECT_EQ(cfg.pos_embed_seq_len, 10);
  auto refused = [&](nlohmann::json j, std::initializer_list<std::string> parts) {
    test_util::expect_error([&] { (void)WanTransformerConfig::from_json(j, "tf/config.json"); }, ExitCode::kInput,
                            parts);
  };
  auto j = base;
  j["added_kv_proj_dim"] = nullptr;
  refused(j, {"tf/config.json", "image_dim", "added_kv_proj_dim"});
  j = base;
  j["added_kv_proj_dim"] = 48;
  refused(j, {"added_kv_proj_dim", "48", "24"});
  j = base;
  j["pos_embed_seq_len"] = 9;
  refused(j, {"pos_embed_seq_len", "9"});
  j = base;
  j["image_dim"] = "32";
  refused(j, {"image_dim"});
}

}  // namespace
}  // namespace omni::models
