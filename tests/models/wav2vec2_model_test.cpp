// The wav2vec2 audio encoder (Wan2.2-S2V's) and its feature extractor against transformers (float32 CPU), on the
// cases tools/reference/wav2vec2_cases.py writes ($OMNI_WAV2VEC2_CASES): a Wav2Vec2ForCTC at wav2vec2-large-xlsr-53's
// widths in the published folder's names, and a small Wav2Vec2Model in transformers 5's names; every hidden state
// as transformers 4.51.3 (Wan2.2's pin) returns them.
#include "models/wav2vec2_model.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/json_file.h"
#include "io/safetensors.h"
#include "io/wav2vec2_feature_extractor.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::models {
namespace {

using test_util::max_abs_err;
using test_util::max_rel_err;

// Hidden states relative to their largest magnitude: float32 with the same operations in the same order as
// transformers but for the GEMM, convolution and attention kernels' summation orders.
constexpr double kFloat32RelTol = 1e-5;

struct Cases {
  std::string dir = test_util::reference_cases("OMNI_WAV2VEC2_CASES", "wav2vec2_cases.py");
  nlohmann::json index = io::read_json(dir + "/cases.json");
  io::SafetensorsFile expected{dir + "/expected.safetensors"};
  at::Tensor want(const std::string& name) const { return expected.read(name); }
  std::vector<float> speech() const {
    const std::string bytes = test_util::read_file(dir + "/speech.f32");
    std::vector<float> out(bytes.size() / 4);
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
};

TEST(Wav2Vec2FeatureExtractor, InputValuesMatchTransformers) {
  const Cases cases;
  const auto config = io::Wav2Vec2FeatureExtractorConfig::from_folder(cases.dir + "/xlsr");
  EXPECT_TRUE(config.do_normalize);
  const std::vector<float> values = io::wav2vec2_input_values(cases.speech(), config);
  const auto got =
      at::from_blob(const_cast<float*>(values.data()), {1, static_cast<int64_t>(values.size())}, at::kFloat);
  const auto want = cases.want("input_values");
  ASSERT_EQ(got.sizes(), want.sizes());
  // numpy sums the mean and variance in float32 (pairwise), we in double: a relative difference near 1e-7.
  const double rel = max_rel_err(got, want);
  std::printf("input_values: max abs err %.3g, relative %.3g\n", max_abs_err(got, want), rel);
  EXPECT_LT(rel, 1e-6);
  EXPECT_NEAR(got.mean().item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(got.std(/*unbiased=*/false).item<double>(), 1.0, 1e-5);
}

TEST(Wav2Vec2Model, HiddenStatesMatchTransformers) {
  const Cases cases;
  const auto input = cases.want("input_values");
  for (const auto& entry : cases.index["folders"]) {
    const std::string folder = entry.get<std::string>();
    SCOPED_TRACE(folder);
    const auto model = Wav2Vec2Model::load(cases.dir + "/" + folder, at::kFloat);
    const bool xlsr = folder == "xlsr";
    EXPECT_EQ(model->config().prefix, xlsr ? "wav2vec2." : "");
    EXPECT_EQ(model->config().legacy_weight_norm, xlsr);
    EXPECT_EQ(model->config().has_lm_head, xlsr);
    EXPECT_EQ(model->config().frames_for(input.size(1)), cases.index["frames"].get<int64_t>());
    const auto got = model->hidden_states(input);
    const auto want = cases.want(folder + ".hidden_states");
    ASSERT_EQ(got.sizes(), want.sizes());
    for (int64_t i = 0; i < want.size(0); ++i) {
      const double rel = max_rel_err(got[i], want[i]);
      std::printf("[%s] hidden_states[%ld]: max abs err %.3g, relative %.3g\n", folder.c_str(), i,
                  max_abs_err(got[i], want[i]), rel);
      EXPECT_LT(rel, kFloat32RelTol) << "state " << i;
    }
    // The states differ from each other by far more than the tolerance (the comparisons above could fail), and
    // the last one is normalized: transformers 5's unnormalized last layer output would not pass.
    EXPECT_GT(max_rel_err(want[0], want[1]), 100 * kFloat32RelTol);
    EXPECT_GT(max_rel_err(want[want.size(0) - 1], want[want.size(0) - 2]), 100 * kFloat32RelTol);
  }
}

TEST(Wav2Vec2Model, TooShortAudioIsAnInputError) {
  const Cases cases;
  const auto model = Wav2Vec2Model::load(cases.dir + "/small_new_names", at::kFloat);
  EXPECT_EQ(model->config().frames_for(400), 1);  // 400 samples: the receptive field of one frame
  EXPECT_EQ(model->config().frames_for(399), 0);
  test_util::expect_error([&] { model->hidden_states(at::zeros({1, 399})); }, ExitCode::kInput, {"too short"});
}

}  // namespace
}  // namespace omni::models
