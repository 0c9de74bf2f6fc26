// Wan2.2-S2V's audio features (pipeline/s2v_audio_encoder.h) against Wan2.2's own AudioEncoder, as
// tools/reference/s2v/record_s2v.py recorded it from Wan2.2 @ 42bf4cfa (tests/data/reference/s2v-audio): a tiny
// random wav2vec2 (24 layers, 32 wide, transformers 4.51.3's last state), 2 s of 16 kHz speech-like samples, the
// features resampled to 30 fps and bucketed into clips of 12 and of 80 frames at 16 fps.
#include "pipeline/s2v_audio_encoder.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <vector>

#include "io/safetensors.h"
#include "io/wav2vec2_feature_extractor.h"
#include "models/wav2vec2_model.h"
#include "tensor_check.h"
#include "test_util.h"

namespace omni::pipeline {
namespace {

using test_util::max_abs_err;
using test_util::max_rel_err;

struct Recorded {
  std::string dir = test_util::case_dir("s2v-audio");
  io::SafetensorsFile file{dir + "/audio.safetensors"};
  at::Tensor get(const std::string& key) const { return file.read(key); }
};

TEST(S2vAudioEncoder, HiddenStatesAsWan) {
  const Recorded rec;
  const auto encoder = models::Wav2Vec2Model::load(rec.dir + "/wav2vec2", at::kFloat);
  const auto wave = rec.get("wave");
  const std::vector<float> samples(wave.data_ptr<float>(), wave.data_ptr<float>() + wave.numel());
  const auto extractor = io::Wav2Vec2FeatureExtractorConfig::from_folder(rec.dir + "/wav2vec2");
  const auto got = speech_hidden_states(*encoder, samples, extractor);
  const auto want = rec.get("hidden_states");
  ASSERT_EQ(got.sizes(), want.sizes());
  const double rel = max_rel_err(got, want);
  std::printf("hidden_states [25, 99, 32]: max abs err %.3g, relative %.3g\n", max_abs_err(got, want), rel);
  EXPECT_LT(rel, 1e-5);
}

TEST(S2vAudioEncoder, InterpolationAsWan) {
  const Recorded rec;
  // From the recorded states: the interpolation alone (50 -> 30 fps: 99 frames -> int(99 / 50 * 30) = 59).
  const auto got = interpolate_audio_features(rec.get("hidden_states"), 50, 30);
  const auto want = rec.get("feat");
  ASSERT_EQ(got.sizes(), want.sizes());
  const double err = max_abs_err(got, want);
  std::printf("feat [25, 59, 32]: max abs err %.3g\n", err);
  EXPECT_EQ(err, 0.0) << "F.interpolate's own kernel on the same values";
}

TEST(S2vAudioEncoder, BucketsAsWan) {
  const Recorded rec;
  const auto feat = rec.get("feat");
  for (int64_t frames : {12, 80}) {
    SCOPED_TRACE(frames);
    const AudioBuckets got = bucket_audio_features(feat, 16, frames);
    const auto want = rec.get("bucket.f" + std::to_string(frames));  // [1, 25, 32, n * frames]
    EXPECT_EQ(got.num_clips, rec.get("num_repeat.f" + std::to_string(frames)).item<int64_t>());
    ASSERT_EQ(got.embeds.unsqueeze(0).sizes(), want.sizes());
    EXPECT_TRUE(got.embeds.unsqueeze(0).equal(want)) << "pure indexing: the same values";
  }
  // 59 frames at 30 fps for clips of 12 video frames (22.5 slots each): 3 clips, the last past the audio's end
  // from slot 32 (round(32 * 1.875) = 60 > 58), zeros there.
  const AudioBuckets three = bucket_audio_features(feat, 16, 12);
  EXPECT_EQ(three.num_clips, 3);
  EXPECT_TRUE(three.embeds.select(2, 31).equal(feat.select(1, 58)));  // round(58.125) = 58
  EXPECT_EQ(three.embeds.select(2, 32).abs().max().item<float>(), 0.0f);
  // Half-way slots round to even: slot 4 -> 7.5 -> 8, slot 12 -> 22.5 -> 22.
  EXPECT_TRUE(three.embeds.select(2, 4).equal(feat.select(1, 8)));
  EXPECT_TRUE(three.embeds.select(2, 12).equal(feat.select(1, 22)));
  // m = 1: each slot with its neighbours int(30 / 16) = 1 apart, clamped at the start.
  const AudioBuckets wide = bucket_audio_features(feat, 16, 12, 1);
  EXPECT_EQ(wide.embeds.size(1), 3 * 32);
  EXPECT_TRUE(wide.embeds.select(2, 0).narrow(1, 0, 32).equal(feat.select(1, 0)));
  EXPECT_TRUE(wide.embeds.select(2, 1).narrow(1, 64, 32).equal(feat.select(1, 3)));  // slot 1 -> 2, then +1
}

}  // namespace
}  // namespace omni::pipeline
