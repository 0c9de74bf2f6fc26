// Wan2.2-S2V's audio features (wan/modules/s2v/audio_encoder.py, AudioEncoder): the recording's 16 kHz samples
// through wav2vec2, every hidden state kept, resampled in time from wav2vec2's 50 frames per second to the video
// rate (30), then sampled at the video's frame times (16 fps) into clips of frames_per_clip slots.
// docs/s2v-reference.md section 5.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace omni::io {
struct Wav2Vec2FeatureExtractorConfig;
}

namespace omni::models {
class Wav2Vec2Model;
struct UnitHooks;
}  // namespace omni::models

namespace omni::pipeline {

// extract_audio_feat(return_all_layers=True) up to the interpolation: samples (mono, 16 kHz) normalized by the
// feature extractor, wav2vec2's hidden states [L + 1, 1, T, D] -> [L + 1, T, D] in float32 (Wan2.2 runs the
// encoder in float32 on the CPU).
// On `device` (the encoder's); hooks: HSDP's for a sharded encoder (null: none).
at::Tensor speech_hidden_states(const models::Wav2Vec2Model& encoder, const std::vector<float>& samples,
                                const io::Wav2Vec2FeatureExtractorConfig& extractor,
                                const at::Device& device = at::kCPU, models::UnitHooks* hooks = nullptr);

// The clips get_audio_embed_bucket_fps makes of `samples` 16 kHz samples (bucket_audio_features' num_clips, from
// the sample count alone): wav2vec2's frames (`frames` of its feature extractor) at 50 per second, int(T / 50 x
// 30) frames at 30, int(that / (frames_per_clip x 30 / fps)) + 1 clips. 0 when the audio makes no 30 fps frame.
int64_t speech_clips(int64_t wav2vec2_frames, int64_t frames_per_clip, double fps);

// linear_interpolation(features, input_fps, output_fps): [L, T, D] -> [L, int(T / input_fps * output_fps), D],
// linear with aligned corners along time (F.interpolate's kernel itself).
at::Tensor interpolate_audio_features(const at::Tensor& features, double input_fps, double output_fps);

struct AudioBuckets {
  at::Tensor embeds;      // [L, (2m + 1) * D, num_clips * frames_per_clip], the layout the transformer takes
  int64_t num_clips = 0;  // int(T / (frames_per_clip * video_rate / fps)) + 1: one more than the whole clips
};

// get_audio_embed_bucket_fps(features, fps, batch_frames=frames_per_clip, m): video frame i takes the feature at
// round(i * video_rate / fps) (numpy's round, half to even) and its m neighbours each side at int(video_rate /
// fps) apart (clamped to the features), or zeros once past the features' end. `features` [L, T, D] at
// video_rate.
AudioBuckets bucket_audio_features(const at::Tensor& features, double fps, int64_t frames_per_clip, int64_t m = 0,
                                   double video_rate = 30.0);

}  // namespace omni::pipeline
