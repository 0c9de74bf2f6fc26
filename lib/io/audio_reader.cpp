#include "io/audio_reader.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
}

#include <soxr.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <set>

#include "core/error.h"
#include "io/video_common.h"

namespace omni::io {
namespace {

struct AudioDecoder {
  AVFormatContext* fmt = nullptr;
  AVCodecContext* codec = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  ~AudioDecoder() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    avcodec_free_context(&codec);
    avformat_close_input(&fmt);
  }
};

// librosa tries soundfile (libsndfile) first and falls back to audioread (the ffmpeg command line, 16-bit) when
// libsndfile cannot open the file: these are the containers and codecs libsndfile reads.
bool read_by_libsndfile(const std::string& container, AVCodecID codec) {
  static const std::set<std::string> containers = {"wav", "w64", "aiff", "au", "caf", "flac", "ogg", "mp3"};
  if (containers.count(container) == 0) return false;
  switch (codec) {
    case AV_CODEC_ID_FLAC:
    case AV_CODEC_ID_VORBIS:
    case AV_CODEC_ID_OPUS:
    case AV_CODEC_ID_MP3:
    case AV_CODEC_ID_PCM_ALAW:
    case AV_CODEC_ID_PCM_MULAW:
    case AV_CODEC_ID_ADPCM_IMA_WAV:
    case AV_CODEC_ID_ADPCM_MS:
    case AV_CODEC_ID_GSM_MS:
      return true;
    default:  // the PCM family: integers of 8 to 32 bits, float and double, either byte order
      return avcodec_get_type(codec) == AVMEDIA_TYPE_AUDIO && std::strncmp(avcodec_get_name(codec), "pcm_", 4) == 0;
  }
}

// One decoded sample as libsndfile's sf_read_float gives it: integers scaled by 2^-(bits-1) (unsigned 8-bit
// centred first), float as is, double rounded to float.
float to_float(const uint8_t* data, AVSampleFormat format, int64_t i) {
  switch (format) {
    case AV_SAMPLE_FMT_U8:
    case AV_SAMPLE_FMT_U8P:
      return (static_cast<int>(data[i]) - 0x80) * (1.0f / (1 << 7));
    case AV_SAMPLE_FMT_S16:
    case AV_SAMPLE_FMT_S16P:
      return reinterpret_cast<const int16_t*>(data)[i] * (1.0f / (1 << 15));
    case AV_SAMPLE_FMT_S32:
    case AV_SAMPLE_FMT_S32P:
      return static_cast<float>(reinterpret_cast<const int32_t*>(data)[i] * (1.0 / (1u << 31)));
    case AV_SAMPLE_FMT_FLT:
    case AV_SAMPLE_FMT_FLTP:
      return reinterpret_cast<const float*>(data)[i];
    case AV_SAMPLE_FMT_DBL:
    case AV_SAMPLE_FMT_DBLP:
      return static_cast<float>(reinterpret_cast<const double*>(data)[i]);
    default:
      OMNI_CHECK(false, "unexpected sample format ", av_get_sample_fmt_name(format));
  }
  return 0.0f;
}

// The same sample as `ffmpeg -f s16le` writes it (libswresample's conversions, no dither), scaled by 2^-15 as
// librosa's buf_to_float scales audioread's bytes.
float to_16_bit(const uint8_t* data, AVSampleFormat format, int64_t i) {
  int16_t level = 0;
  switch (format) {
    case AV_SAMPLE_FMT_U8:
    case AV_SAMPLE_FMT_U8P:
      level = static_cast<int16_t>((static_cast<int>(data[i]) - 0x80) * (1 << 8));
      break;
    case AV_SAMPLE_FMT_S16:
    case AV_SAMPLE_FMT_S16P:
      level = reinterpret_cast<const int16_t*>(data)[i];
      break;
    case AV_SAMPLE_FMT_S32:
    case AV_SAMPLE_FMT_S32P:
      level = static_cast<int16_t>(reinterpret_cast<const int32_t*>(data)[i] >> 16);
      break;
    case AV_SAMPLE_FMT_FLT:
    case AV_SAMPLE_FMT_FLTP:
      level = static_cast<int16_t>(
          std::clamp<long>(std::lrintf(reinterpret_cast<const float*>(data)[i] * (1 << 15)), -32768, 32767));
      break;
    case AV_SAMPLE_FMT_DBL:
    case AV_SAMPLE_FMT_DBLP:
      level = static_cast<int16_t>(
          std::clamp<long>(std::lrint(reinterpret_cast<const double*>(data)[i] * (1 << 15)), -32768, 32767));
      break;
    default:
      OMNI_CHECK(false, "unexpected sample format ", av_get_sample_fmt_name(format));
  }
  return level * (1.0f / (1 << 15));
}

// A RIFF WAV's declared data size against the bytes present: true when `path` ends before its data chunk does.
// (libav clamps such a file to its size and guesses the duration from the bit rate: no other sign is left.) A
// size of 0 or 0xFFFFFFFF is a streaming writer's "unknown", not a length.
bool wav_cut_short(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  auto u32 = [](const unsigned char* b) { return b[0] | b[1] << 8 | b[2] << 16 | static_cast<uint32_t>(b[3]) << 24; };
  unsigned char head[12], chunk[8];
  bool cut = false;
  if (std::fread(head, 1, 12, f) == 12 && std::memcmp(head, "RIFF", 4) == 0 && std::memcmp(head + 8, "WAVE", 4) == 0) {
    long offset = 12;
    while (std::fseek(f, offset, SEEK_SET) == 0 && std::fread(chunk, 1, 8, f) == 8) {
      const uint32_t size = u32(chunk + 4);
      if (std::memcmp(chunk, "data", 4) == 0) {
        std::fseek(f, 0, SEEK_END);
        const long end = std::ftell(f);
        cut = size != 0 && size != 0xFFFFFFFFu && offset + 8 + static_cast<long>(size) > end;
        break;
      }
      offset += 8 + static_cast<long>(size) + (size & 1);  // chunks are padded to an even size
    }
  }
  std::fclose(f);
  return cut;
}

}  // namespace

std::vector<float> resample_audio(const std::vector<float>& samples, int in_rate, int out_rate) {
  OMNI_CHECK(in_rate > 0 && out_rate > 0, "resample_audio: rates must be positive (", in_rate, ", ", out_rate, ")");
  if (in_rate == out_rate) return samples;  // librosa.resample returns the input unchanged
  const size_t ilen = samples.size();
  // librosa's length: int(np.ceil(n * (float(target_sr) / orig_sr))).
  const auto wanted =
      static_cast<size_t>(std::ceil(static_cast<double>(ilen) * (static_cast<double>(out_rate) / in_rate)));
  std::vector<float> out(static_cast<size_t>(static_cast<double>(ilen) * out_rate / in_rate) + 1, 0.0f);
  soxr_error_t err = nullptr;
  const soxr_io_spec_t io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I);
  const soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
  soxr_t soxr = soxr_create(in_rate, out_rate, 1, &err, &io, &quality, nullptr);
  OMNI_CHECK(err == nullptr, "libsoxr: ", err);
  // python-soxr feeds the input in blocks of max(1000, 48000 * in / out) frames, then flushes; the output does
  // not depend on the blocks, but the same ones are used.
  const auto block = static_cast<size_t>(std::max(1000.0, 48000.0 * in_rate / out_rate));
  size_t done = 0, produced = 0;
  for (size_t i = 0; i < ilen && err == nullptr; i += block) {
    err = soxr_process(soxr, samples.data() + i, std::min(block, ilen - i), nullptr, out.data() + done,
                       out.size() - done, &produced);
    done += produced;
  }
  if (err == nullptr) err = soxr_process(soxr, nullptr, 0, nullptr, out.data() + done, out.size() - done, &produced);
  done += produced;
  soxr_delete(soxr);
  OMNI_CHECK(err == nullptr, "libsoxr: ", err);
  out.resize(done);
  out.resize(wanted, 0.0f);  // librosa.util.fix_length: cut, or pad with zeros
  return out;
}

namespace {

// Every channel of the first audio stream of `path` at the stream's rate, float as librosa receives it (or, with
// `full_precision`, as decoded), with the span `span` cut out of it (info, first, count).
struct Decoded {
  AudioInfo info;
  std::vector<std::vector<float>> channels;  // the whole stream
  int64_t first = 0, count = 0;              // the span
};

Decoded decode_audio(const std::string& path, const AudioSpan& span, bool full_precision) {
  struct stat st;
  OMNI_CHECK_INPUT(::stat(path.c_str(), &st) == 0, "audio '", path, "' cannot be read: ", std::strerror(errno));
  OMNI_CHECK_INPUT(!S_ISDIR(st.st_mode), "audio '", path, "' is a folder, not an audio file");
  quiet_libav_logs();
  AudioDecoder dec;
  int rc = avformat_open_input(&dec.fmt, path.c_str(), nullptr, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "audio '", path, "' cannot be opened: ", av_error_string(rc));
  rc = avformat_find_stream_info(dec.fmt, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "audio '", path, "': cannot read stream information: ", av_error_string(rc));
  int index = -1;  // the first audio stream
  for (unsigned i = 0; i < dec.fmt->nb_streams && index < 0; ++i)
    if (dec.fmt->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) index = static_cast<int>(i);
  OMNI_CHECK_INPUT(index >= 0, "'", path, "' has no audio stream");
  AVStream* stream = dec.fmt->streams[index];
  const AVCodec* codec = avcodec_find_decoder(stream->codecpar->codec_id);
  OMNI_CHECK_INPUT(codec, "audio '", path, "': no decoder for its ", avcodec_get_name(stream->codecpar->codec_id),
                   " stream in this FFmpeg build");
  dec.codec = avcodec_alloc_context3(codec);
  OMNI_CHECK(dec.codec, "avcodec_alloc_context3 failed");
  rc = avcodec_parameters_to_context(dec.codec, stream->codecpar);
  OMNI_CHECK(rc >= 0, "avcodec_parameters_to_context failed: ", av_error_string(rc));
  rc = avcodec_open2(dec.codec, codec, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "audio '", path, "': cannot open the ", codec->name, " decoder: ", av_error_string(rc));

  Decoded decoded;
  AudioInfo& info = decoded.info;
  info.container = dec.fmt->iformat->name;
  info.codec = avcodec_get_name(stream->codecpar->codec_id);
  info.as_16_bit = !read_by_libsndfile(info.container, stream->codecpar->codec_id) && !full_precision;
  info.sample_rate = dec.codec->sample_rate;
  info.channels = dec.codec->ch_layout.nb_channels;
  OMNI_CHECK_INPUT(info.sample_rate > 0 && info.channels > 0, "audio '", path, "': its ", info.codec,
                   " stream has no sample rate or channels");

  // Every channel at the stream's rate, float as librosa receives it.
  std::vector<std::vector<float>>& channels = decoded.channels;
  channels.resize(info.channels);
  dec.frame = av_frame_alloc();
  dec.packet = av_packet_alloc();
  OMNI_CHECK(dec.frame && dec.packet, "av_frame_alloc / av_packet_alloc failed");
  auto receive_all = [&] {
    while (true) {
      int r = avcodec_receive_frame(dec.codec, dec.frame);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      OMNI_CHECK_INPUT(r >= 0, "audio '", path, "': decoding failed after ", info.frames,
                       " samples: ", av_error_string(r));
      const AVFrame* f = dec.frame;
      OMNI_CHECK_INPUT(f->sample_rate == info.sample_rate && f->ch_layout.nb_channels == info.channels, "audio '", path,
                       "': the sample rate or channel count changes mid-stream (", info.sample_rate, " Hz ",
                       info.channels, " ch -> ", f->sample_rate, " Hz ", f->ch_layout.nb_channels, " ch)");
      const auto format = static_cast<AVSampleFormat>(f->format);
      const bool planar = av_sample_fmt_is_planar(format);
      for (int c = 0; c < info.channels; ++c) {
        std::vector<float>& out = channels[c];
        const uint8_t* data = planar ? f->extended_data[c] : f->extended_data[0];
        for (int s = 0; s < f->nb_samples; ++s) {
          const int64_t i = planar ? s : static_cast<int64_t>(s) * info.channels + c;
          out.push_back(info.as_16_bit ? to_16_bit(data, format, i) : to_float(data, format, i));
        }
      }
      info.frames += f->nb_samples;
      av_frame_unref(dec.frame);
    }
  };
  while ((rc = av_read_frame(dec.fmt, dec.packet)) != AVERROR_EOF) {
    OMNI_CHECK_INPUT(rc >= 0, "audio '", path, "': reading a packet failed after ", info.frames,
                     " samples: ", av_error_string(rc));
    if (dec.packet->stream_index == index) {
      rc = avcodec_send_packet(dec.codec, dec.packet);
      av_packet_unref(dec.packet);
      OMNI_CHECK_INPUT(rc >= 0, "audio '", path, "': corrupt packet after ", info.frames,
                       " samples: ", av_error_string(rc));
      receive_all();
    } else {
      av_packet_unref(dec.packet);
    }
  }
  avcodec_send_packet(dec.codec, nullptr);  // the frames the decoder still holds
  receive_all();
  OMNI_CHECK_INPUT(info.frames > 0, "audio '", path, "' has no samples");

  OMNI_CHECK_INPUT(info.container != "wav" || !wav_cut_short(path), "audio '", path,
                   "' is truncated: its data chunk declares more samples than the file holds (", info.duration(),
                   " s could be decoded)");
  // A file cut short: the header declared a length (not a guess from the bit rate) that decoding fell short of by
  // more than a packet's worth (a tenth of a second).
  if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0 &&
      dec.fmt->duration_estimation_method != AVFMT_DURATION_FROM_BITRATE) {
    const double declared = stream->duration * av_q2d(stream->time_base);
    OMNI_CHECK_INPUT(info.duration() >= declared - 0.1, "audio '", path, "' is truncated: its header declares ",
                     declared, " s, only ", info.duration(), " s could be decoded");
  }

  // The span at the stream's rate, as librosa's soundfile path cuts it: int(offset * sr), int(duration * sr).
  const auto first = static_cast<int64_t>(span.start * info.sample_rate);
  OMNI_CHECK_INPUT(span.start >= 0 && first < info.frames, "audio '", path, "' is ", info.duration(),
                   " s long; the span starts at ", span.start, " s");
  int64_t count = info.frames - first;
  if (span.duration >= 0) count = std::min(count, static_cast<int64_t>(span.duration * info.sample_rate));
  OMNI_CHECK_INPUT(count > 0, "audio '", path, "': a span of ", span.duration, " s holds no sample");
  decoded.first = first;
  decoded.count = count;
  return decoded;
}

}  // namespace

Audio load_audio(const std::string& path, int sample_rate, const AudioSpan& span) {
  Decoded decoded = decode_audio(path, span, false);
  const AudioInfo& info = decoded.info;
  const std::vector<std::vector<float>>& channels = decoded.channels;
  const int64_t first = decoded.first, count = decoded.count;
  Audio audio;
  audio.info = info;
  audio.span_first = first;
  audio.span_frames = count;

  // librosa.to_mono: the channels' mean in float32, added in channel order.
  std::vector<float> mono(channels[0].begin() + first, channels[0].begin() + first + count);
  if (info.channels > 1) {
    for (int c = 1; c < info.channels; ++c)
      for (int64_t i = 0; i < count; ++i) mono[i] += channels[c][first + i];
    const auto n = static_cast<float>(info.channels);
    for (float& v : mono) v /= n;
  }
  decoded.channels.clear();
  audio.samples = resample_audio(mono, info.sample_rate, sample_rate);
  audio.sample_rate = sample_rate;
  return audio;
}

AudioTrack load_audio_track(const std::string& path, const AudioSpan& span) {
  const Decoded decoded = decode_audio(path, span, true);
  AudioTrack track;
  track.sample_rate = decoded.info.sample_rate;
  track.channels = decoded.info.channels;
  track.samples.resize(static_cast<size_t>(decoded.count) * track.channels);
  for (int c = 0; c < track.channels; ++c)
    for (int64_t i = 0; i < decoded.count; ++i)
      track.samples[i * track.channels + c] = decoded.channels[c][decoded.first + i];
  return track;
}

}  // namespace omni::io
