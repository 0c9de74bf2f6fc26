// Audio input: any file libav reads, as `librosa.load(path, sr=RATE, offset=START, duration=DURATION)` gives it
// (what Wan2.2's S2V audio encoder calls, with sr=16000): one channel, float32, at RATE.
//
// librosa reads a file through libsndfile (soundfile) when libsndfile can, else through the ffmpeg command line
// as 16-bit samples (audioread). Both are reproduced:
//  - WAV / W64 / AIFF / AU / CAF (PCM, float), FLAC, Ogg Vorbis / Opus / FLAC and MP3: decoded to float as
//    libsndfile does (integers scaled by 2^-(bits-1); float kept). Equal to soundfile's samples for PCM, FLAC and
//    float; MP3 and Vorbis come from libav's decoders, within 1e-6 of libsndfile's (mpg123, libvorbis); Opus
//    within 1e-4 (libav's Opus decoder against libopus).
//  - Everything else (M4A / AAC, MP4 audio, WMA, AC-3, ...): rounded to 16 bits as `ffmpeg -f s16le` rounds
//    (lrintf(x * 32768), clipped), then scaled by 2^-15, as audioread hands them to librosa.
// Then the channels' mean (librosa.to_mono, in float32), then soxr's "HQ" resampler (libsoxr, as python-soxr
// drives it) and librosa's fix_length to ceil(frames * RATE / native rate). The span is cut at the native rate
// before resampling: int(START * native) frames skipped, int(DURATION * native) frames kept.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace omni::io {

struct AudioInfo {
  std::string container;  // libavformat's demuxer name: "wav", "mp3", "mov,mp4,m4a,3gp,3g2,mj2", ...
  std::string codec;      // as ffprobe prints codec_name: "pcm_s16le", "aac", "mp3", "opus", ...
  int sample_rate = 0;    // the stream's own rate
  int channels = 0;
  int64_t frames = 0;      // sample frames decoded, the whole stream, at the stream's rate
  bool as_16_bit = false;  // read through librosa's audioread path (rounded to 16 bits)
  double duration() const { return sample_rate > 0 ? static_cast<double>(frames) / sample_rate : 0.0; }
};

// A part of a recording, in seconds: `start` from the beginning, `duration` long (< 0: to the end).
struct AudioSpan {
  double start = 0.0;
  double duration = -1.0;
};

struct Audio {
  std::vector<float> samples;  // mono, at sample_rate
  int sample_rate = 0;
  AudioInfo info;
  int64_t span_first = 0;   // the span's first frame, at the stream's rate
  int64_t span_frames = 0;  // its length, at the stream's rate
};

// Sound as a file holds it: float samples, channels interleaved, at the stream's own rate.
struct AudioTrack {
  std::vector<float> samples;  // frame-major: [frames][channels]
  int sample_rate = 0;
  int channels = 0;
  int64_t frames() const { return channels > 0 ? static_cast<int64_t>(samples.size()) / channels : 0; }
  double duration() const { return sample_rate > 0 ? static_cast<double>(frames()) / sample_rate : 0.0; }
};

// The first audio stream of `path` as described above. Input errors (exit 3), one line naming the file: missing,
// a folder, unreadable, no audio stream, a corrupt or truncated stream (fewer frames decoded than its header
// declares), no samples, a span that starts at or past the end.
Audio load_audio(const std::string& path, int sample_rate, const AudioSpan& span = {});

// The same span of the same stream, every channel as decoded (float, not rounded to 16 bits), at the stream's
// rate: the sound muxed beside a video made from it (io/video_writer.h). Input errors as load_audio's.
AudioTrack load_audio_track(const std::string& path, const AudioSpan& span = {});

// Mono float32 samples from in_rate to out_rate as librosa.resample(res_type="soxr_hq") makes them: libsoxr's HQ
// quality, fed in python-soxr's blocks and flushed, then cut or zero-padded to ceil(n * out_rate / in_rate).
// Equal rates return the input.
std::vector<float> resample_audio(const std::vector<float>& samples, int in_rate, int out_rate);

}  // namespace omni::io
