#include "pipeline/s2v_audio_encoder.h"

#include <cmath>

#include "core/error.h"
#include "io/wav2vec2_feature_extractor.h"
#include "models/wav2vec2_model.h"

namespace omni::pipeline {

at::Tensor speech_hidden_states(const models::Wav2Vec2Model& encoder, const std::vector<float>& samples,
                                const io::Wav2Vec2FeatureExtractorConfig& extractor, const at::Device& device,
                                models::UnitHooks* hooks) {
  std::vector<float> values = io::wav2vec2_input_values(samples, extractor);
  const auto input = at::from_blob(values.data(), {1, static_cast<int64_t>(values.size())}, at::kFloat).clone();
  return encoder.hidden_states(input.to(device), hooks).squeeze(1).to(at::kFloat);  // [L + 1, 1, T, D] -> [L + 1, T, D]
}

int64_t speech_clips(int64_t wav2vec2_frames, int64_t frames_per_clip, double fps) {
  // interpolate_audio_features' length and bucket_audio_features' count, with Wan2.2's 50 and 30 fps.
  const auto at30 = static_cast<int64_t>(static_cast<double>(wav2vec2_frames) / 50.0 * 30.0);
  if (at30 <= 0) return 0;
  return static_cast<int64_t>(static_cast<double>(at30) / (static_cast<double>(frames_per_clip) * (30.0 / fps))) + 1;
}

at::Tensor interpolate_audio_features(const at::Tensor& features, double input_fps, double output_fps) {
  OMNI_CHECK(features.dim() == 3 && features.size(1) > 0,
             "interpolate_audio_features: features must be [L, T, D], got ", features.sizes());
  // Wan2.2: seq_len = T / float(input_fps); output_len = int(seq_len * output_fps).
  const auto length = static_cast<int64_t>(static_cast<double>(features.size(1)) / input_fps * output_fps);
  OMNI_CHECK_INPUT(length > 0, "the audio is too short: ", features.size(1), " wav2vec2 frames make no frame at ",
                   output_fps, " fps");
  // [L, T, D] -> [L, D, T]: F.interpolate(mode="linear", align_corners=True) resamples the last dimension.
  const auto resampled = at::upsample_linear1d(features.transpose(1, 2).contiguous(), {length}, true);
  return resampled.transpose(1, 2).contiguous();  // [L, length, D]
}

AudioBuckets bucket_audio_features(const at::Tensor& features, double fps, int64_t frames_per_clip, int64_t m,
                                   double video_rate) {
  OMNI_CHECK(features.dim() == 3, "bucket_audio_features: features must be [L, T, D], got ", features.sizes());
  OMNI_CHECK(fps > 0 && frames_per_clip > 0 && m >= 0, "bucket_audio_features: fps ", fps, ", frames_per_clip ",
             frames_per_clip, ", m ", m);
  const int64_t layers = features.size(0), frames = features.size(1), dim = features.size(2);
  const double scale = video_rate / fps;
  AudioBuckets out;
  out.num_clips =
      static_cast<int64_t>(static_cast<double>(frames) / (static_cast<double>(frames_per_clip) * scale)) + 1;
  const int64_t slots = out.num_clips * frames_per_clip;
  // get_sample_indices: the slots' times linspace(0, slots / fps, slots, endpoint=False) = i / fps, times
  // video_rate, rounded half to even, clipped to the padded length ceil(slots / fps * video_rate).
  const auto padded = static_cast<int64_t>(std::ceil(static_cast<double>(slots) / fps * video_rate));
  const auto stride = static_cast<int64_t>(video_rate / fps);
  const int64_t width = (2 * m + 1) * dim;
  out.embeds = at::zeros({slots, layers, width}, features.options());
  for (int64_t i = 0; i < slots; ++i) {
    const double time = static_cast<double>(i) * ((static_cast<double>(slots) / fps) / static_cast<double>(slots));
    auto index = static_cast<int64_t>(std::nearbyint(time * video_rate));
    index = std::min(std::max<int64_t>(index, 0), padded - 1);
    if (index >= frames) continue;  // past the audio: zeros
    // The 2m + 1 features around it, clamped to the audio, side by side: [L, (2m + 1) * D].
    std::vector<at::Tensor> chosen;
    for (int64_t j = -m; j <= m; ++j) {
      const int64_t c = std::min(std::max<int64_t>(index + j * stride, 0), frames - 1);
      chosen.push_back(features.select(1, c));  // [L, D]
    }
    out.embeds[i].copy_(at::cat(chosen, 1));
  }
  // [slots, L, W] -> [L, W, slots] (Wan2.2: unsqueeze(0).permute(0, 2, 3, 1), batch dropped).
  out.embeds = out.embeds.permute({1, 2, 0}).contiguous();
  return out;
}

}  // namespace omni::pipeline
