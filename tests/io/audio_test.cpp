// The sound track of io::write_video (AAC beside the H.264 picture) read back by ffprobe and by io::load_audio_track,
// and io::load_audio's refusals of bad input. The samples against librosa: audio_corpus_test.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/audio_reader.h"
#include "io/video_reader.h"
#include "io/video_writer.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

using io::AudioTrack;
using io::VideoWriteOptions;

// A voiced tone gliding in pitch with a little noise, a different pitch per channel, `seconds` long.
AudioTrack speech_like(int rate, int channels, double seconds) {
  AudioTrack t;
  t.sample_rate = rate;
  t.channels = channels;
  const auto frames = static_cast<int64_t>(seconds * rate);
  t.samples.resize(frames * channels);
  uint32_t noise = 12345;
  for (int64_t i = 0; i < frames; ++i) {
    const double time = static_cast<double>(i) / rate;
    for (int c = 0; c < channels; ++c) {
      const double phase = 2 * M_PI * ((140 + 60 * c) * time + 50 * time * time);
      noise = noise * 1664525u + 1013904223u;
      const double n = (static_cast<double>(noise >> 8) / (1 << 24) - 0.5) * 0.02;
      t.samples[i * channels + c] = static_cast<float>(0.3 * std::sin(phase) + 0.1 * std::sin(2 * phase) + n);
    }
  }
  return t;
}

// ffprobe's value of `entry` (e.g. "codec_name") for the first audio stream of `path`.
std::string probe_audio(const std::string& path, const std::string& entry) {
  std::string out;
  EXPECT_EQ(run_command("ffprobe -v error -select_streams a:0 -show_entries stream=" + entry +
                            " -of default=nw=1:nk=1 '" + path + "'",
                        &out, false),
            0);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// Signal-to-noise ratio in dB of `decoded` against `original` over their first `frames` x `channels` samples.
double snr_db(const std::vector<float>& original, const std::vector<float>& decoded, int64_t count) {
  double signal = 0, noise = 0;
  for (int64_t i = 0; i < count; ++i) {
    signal += static_cast<double>(original[i]) * original[i];
    const double d = static_cast<double>(decoded[i]) - original[i];
    noise += d * d;
  }
  return 10 * std::log10(signal / std::max(noise, 1e-30));
}

TEST(SoundTrack, AacInSyncWithThePicture) {
  TempDir dir;
  // 33 frames at 16 fps: 2.0625 s of picture; 2.7 s of stereo sound at 44.1 kHz, of which 2.0625 s are kept.
  const AudioTrack sound = speech_like(44100, 2, 2.7);
  VideoWriteOptions options;
  options.audio = &sound;
  io::write_video(dir / "talk.mp4", gradient_clip(33, 32, 48), options);
  EXPECT_EQ(probe_audio(dir / "talk.mp4", "codec_name"), "aac");
  EXPECT_EQ(probe_audio(dir / "talk.mp4", "sample_rate"), "44100");
  EXPECT_EQ(probe_audio(dir / "talk.mp4", "channels"), "2");
  const double video_seconds = 33.0 / 16;
  // The stream's duration as players see it (AAC's priming samples hidden by the edit list): the picture's, within
  // one frame.
  EXPECT_NEAR(std::stod(probe_audio(dir / "talk.mp4", "duration")), video_seconds, 1.0 / 16);

  const AudioTrack back = io::load_audio_track(dir / "talk.mp4");
  EXPECT_EQ(back.sample_rate, 44100);
  EXPECT_EQ(back.channels, 2);
  EXPECT_NEAR(back.duration(), video_seconds, 1.0 / 16);
  // The decoded samples against the encoded ones, aligned at time 0 (in sync): AAC at 64 kb/s per channel keeps
  // this signal above 25 dB; one AAC frame (1024 samples) out of step would leave it near 0 dB.
  const int64_t common = std::min(back.frames(), static_cast<int64_t>(video_seconds * 44100)) * 2;
  const double snr = snr_db(sound.samples, back.samples, common);
  std::printf("sound track: AAC 128 kb/s stereo 44.1 kHz, %.3f s for %.4f s of picture, SNR %.1f dB\n", back.duration(),
              video_seconds, snr);
  EXPECT_GT(snr, 25.0);
  // The picture is the same as without sound.
  io::write_video(dir / "silent.mp4", gradient_clip(33, 32, 48), VideoWriteOptions{});
  EXPECT_TRUE(io::read_video(dir / "talk.mp4").frames.equal(io::read_video(dir / "silent.mp4").frames));
  std::string none;
  EXPECT_EQ(run_command("ffprobe -v error -select_streams a -show_entries stream=index -of csv=p=0 '" +
                            std::string(dir / "silent.mp4") + "'",
                        &none, false),
            0);
  EXPECT_EQ(none, "") << "a video made without sound has no sound track";
}

TEST(SoundTrack, ShortSoundIsPaddedAndOddRatesResampled) {
  TempDir dir;
  // 1 s of mono at 37 kHz (no AAC rate) under 2 s of picture: resampled to 48 kHz, then silence to the end.
  const AudioTrack sound = speech_like(37000, 1, 1.0);
  VideoWriteOptions options;
  options.audio = &sound;
  io::write_video(dir / "short.mp4", gradient_clip(32, 32, 48), options);
  EXPECT_EQ(probe_audio(dir / "short.mp4", "sample_rate"), "48000");
  EXPECT_EQ(probe_audio(dir / "short.mp4", "channels"), "1");
  const AudioTrack back = io::load_audio_track(dir / "short.mp4");
  EXPECT_NEAR(back.duration(), 2.0, 1.0 / 16);
  double loud = 0, quiet = 0;
  for (int64_t i = 0; i < back.frames(); ++i) {
    const double t = static_cast<double>(i) / back.sample_rate;
    if (t > 0.1 && t < 0.9) loud = std::max(loud, std::fabs(static_cast<double>(back.samples[i])));
    if (t > 1.1) quiet = std::max(quiet, std::fabs(static_cast<double>(back.samples[i])));
  }
  EXPECT_GT(loud, 0.3) << "the sound";
  EXPECT_LT(quiet, 1e-3) << "the silence after it";
}

TEST(AudioReader, BadInputsNameTheFile) {
  TempDir dir;
  expect_error([&] { io::load_audio(dir / "none.wav", 16000); }, ExitCode::kInput,
               {dir / "none.wav", "cannot be read"});
  expect_error([&] { io::load_audio(dir.path(), 16000); }, ExitCode::kInput, {dir.path(), "folder"});
  write_file(dir / "text.mp3", "this is not a recording at all");
  expect_error([&] { io::load_audio(dir / "text.mp3", 16000); }, ExitCode::kInput, {dir / "text.mp3"});
  // A video without sound.
  io::write_video(dir / "silent.mp4", gradient_clip(9, 32, 48), VideoWriteOptions{});
  expect_error([&] { io::load_audio(dir / "silent.mp4", 16000); }, ExitCode::kInput,
               {dir / "silent.mp4", "no audio stream"});
  // A WAV cut short: its header declares 2 s, a third of the data is there.
  std::string out;
  ASSERT_EQ(run_command("ffmpeg -v error -y -f lavfi -i sine=frequency=300:sample_rate=16000:duration=2 -c:a "
                        "pcm_s16le '" +
                            std::string(dir / "full.wav") + "'",
                        &out),
            0)
      << out;
  const std::string wav = read_file(dir / "full.wav");
  write_file(dir / "cut.wav", wav.substr(0, wav.size() / 3 / 2 * 2));  // whole 16-bit samples
  expect_error([&] { io::load_audio(dir / "cut.wav", 16000); }, ExitCode::kInput, {dir / "cut.wav", "truncated"});
  write_file(dir / "odd.wav", wav.substr(0, wav.size() / 3 / 2 * 2 + 1));  // and half a sample
  expect_error([&] { io::load_audio(dir / "odd.wav", 16000); }, ExitCode::kInput, {dir / "odd.wav"});
  // An M4A cut short (index first, the data cut): the stream falls short of the duration its index declares.
  const AudioTrack sound = speech_like(48000, 2, 2.0);
  VideoWriteOptions options;
  options.audio = &sound;
  io::write_video(dir / "talk.mp4", gradient_clip(32, 32, 48), options);
  const std::string mp4 = read_file(dir / "talk.mp4");
  write_file(dir / "cut.mp4", mp4.substr(0, mp4.size() * 6 / 10));
  expect_error([&] { io::load_audio(dir / "cut.mp4", 16000); }, ExitCode::kInput, {dir / "cut.mp4"});
  // The whole file reads; a span that starts at or past its end does not, nor an empty one.
  EXPECT_EQ(io::load_audio(dir / "full.wav", 16000).samples.size(), 32000u);
  EXPECT_EQ(io::load_audio(dir / "full.wav", 16000, {0.5, 1.0}).samples.size(), 16000u);
  expect_error(
      [&] {
        io::load_audio(dir / "full.wav", 16000, {2.0, -1});
      },
      ExitCode::kInput, {dir / "full.wav", "starts at 2"});
  expect_error(
      [&] {
        io::load_audio(dir / "full.wav", 16000, {0.5, 0.00001});
      },
      ExitCode::kInput, {dir / "full.wav", "holds no sample"});
}

TEST(AudioReader, ResampleLengthAsLibrosa) {
  // librosa.resample's length: ceil(n * out / in); the same rate returns the input.
  const std::vector<float> x(44101, 0.25f);
  EXPECT_EQ(io::resample_audio(x, 44100, 16000).size(), 16001u);  // ceil(44101 * 16000 / 44100) = 16001
  EXPECT_EQ(io::resample_audio(x, 16000, 16000), x);
  const std::vector<float> y(8000, 0.25f);
  const std::vector<float> up = io::resample_audio(y, 8000, 16000);
  ASSERT_EQ(up.size(), 16000u);
  EXPECT_NEAR(up[8000], 0.25f, 1e-4) << "a constant stays constant away from the ends";
}

}  // namespace
}  // namespace omni::media_test
