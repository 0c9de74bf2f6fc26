// WanVACETransformer3DModel (VACE blocks, their context's patch embedding and zero padding, the hints added after
// the paired blocks with one scale per VACE block) against diffusers 0.40 (float32 CPU), on the cases
// tools/reference/vace_cases.py writes ($OMNI_VACE_CASES); the HSDP units' order; the config's checks.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
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
  return test_util::reference_cases("OMNI_VACE_CASES", "vace_cases.py") + "/" + name;
}

std::vector<double> scales_of(const at::Tensor& t) {
  std::vector<double> out;
  for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t[i].item<double>());
  return out;
}

class Vace : public ::testing::TestWithParam<const char*> {};

TEST_P(Vace, OutputMatchesDiffusers) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  ASSERT_TRUE(model->config().is_vace());
  const io::SafetensorsFile io(dir + "/io.safetensors");
  const auto scale = scales_of(io.read("control_scale"));
  auto run = [&](const std::vector<double>& s) {
    return model->forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states"), {},
                          at::Tensor(), io.read("control_hidden_states"), s);
  };
  const auto want = io.read("output");
  const auto out = run(std::string(GetParam()) == "padded" ? std::vector<double>{} : scale);
  ASSERT_EQ(out.sizes(), want.sizes());
  const double rel = max_rel_err(out, want);
  std::printf("[%s] output: max abs err %.3g, relative %.3g\n", GetParam(), max_abs_err(out, want), rel);
  EXPECT_LT(rel, kModelFloat32RelTol);
  // With every scale 0 the hints add nothing: diffusers' output then, far from the output with them.
  const auto without = run(std::vector<double>(scale.size(), 0.0));
  EXPECT_LT(max_rel_err(without, io.read("output_without_hints")), kModelFloat32RelTol);
  EXPECT_GT(max_rel_err(without, want), 100 * kModelFloat32RelTol);
}

TEST_P(Vace, HsdpUnitsRunInForwardOrder) {
  const auto model = WanTransformer3DModel::load(case_dir(GetParam()) + "/transformer", at::kFloat);
  const auto units = blocks_of(*model);
  ASSERT_EQ(static_cast<int>(units.size()), model->num_vace_blocks() + model->num_blocks());
  for (int k = 0; k < model->num_vace_blocks(); ++k) EXPECT_EQ(units[k], &model->vace_block(k));
  for (int i = 0; i < model->num_blocks(); ++i) EXPECT_EQ(units[model->num_vace_blocks() + i], &model->block(i));
  // --fp8-layers: the last block is blocks.N-1 although the model has more HSDP units than blocks.
  test_util::expect_last_block_kept(*model, model->num_blocks());
  // The root holds the two patch embeddings and nothing of a block.
  for (const auto& p : model->root_parameters())
    EXPECT_TRUE(p.name.rfind("blocks.", 0) != 0 && p.name.rfind("vace_blocks.", 0) != 0) << p.name;
}

TEST_P(Vace, ContextRequiredAndScalesCounted) {
  const std::string dir = case_dir(GetParam());
  const auto model = WanTransformer3DModel::load(dir + "/transformer", at::kFloat);
  const io::SafetensorsFile io(dir + "/io.safetensors");
  test_util::expect_error(
      [&] { (void)model->forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states")); },
      ExitCode::kUsage, {"VACE context"});
  test_util::expect_error(
      [&] {
        (void)model->forward(io.read("hidden_states"), io.read("timestep"), io.read("encoder_hidden_states"), {},
                             at::Tensor(), io.read("control_hidden_states"), {1.0, 1.0, 1.0, 1.0, 1.0});
      },
      ExitCode::kUsage, {"5 conditioning scales"});
}

INSTANTIATE_TEST_SUITE_P(Diffusers, Vace, ::testing::Values("layers", "padded"));

TEST(VaceConfig, LayersThatCannotPairAreRefused) {
  const auto base = io::read_json(case_dir("padded") + "/transformer/config.json");
  const auto cfg = WanTransformerConfig::from_json(base, "x");
  EXPECT_EQ(cfg.vace_layers, (std::vector<int64_t>{0, 1, 3}));
  EXPECT_EQ(cfg.vace_in_channels, 12);
  auto refused = [&](nlohmann::json j, std::initializer_list<std::string> parts) {
    test_util::expect_error([&] { (void)WanTransformerConfig::from_json(j, "tf/config.json"); }, ExitCode::kInput,
                            parts);
  };
  auto j = base;
  j["vace_layers"] = {1, 3};
  refused(j, {"tf/config.json", "vace_layers", "[1, 3]"});
  j["vace_layers"] = {0, 4};
  refused(j, {"vace_layers", "num_layers 4"});
  j["vace_layers"] = {0, 3, 1};
  refused(j, {"vace_layers", "ascend"});
  j = base;
  j["vace_in_channels"] = 0;
  refused(j, {"vace_in_channels"});
}

}  // namespace
}  // namespace omni::models
