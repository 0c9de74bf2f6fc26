#include "io/video_writer.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libavutil/dict.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>
#include <libavutil/log.h>
#include <libswscale/swscale.h>
}

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "io/video_common.h"

namespace omni::io {
namespace {

std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Owners of the libav objects, so that every early return (an exception) frees them.
struct Encoder {
  AVFormatContext* fmt = nullptr;
  AVCodecContext* codec = nullptr;
  SwsContext* sws = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  AVCodecContext* audio_codec = nullptr;  // the AAC sound track, when there is one
  AVFrame* audio_frame = nullptr;
  ~Encoder() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    av_frame_free(&audio_frame);
    sws_freeContext(sws);
    avcodec_free_context(&codec);
    avcodec_free_context(&audio_codec);
    if (fmt) {
      if (fmt->pb) avio_closep(&fmt->pb);
      avformat_free_context(fmt);
    }
  }
};

// x264 reads memory it allocated and never wrote: the same YUV frames encoded in two processes of ours gave
// different bytes (at 64x64, 96x96 and 832x480, 36-42 dB apart; measured), while the ffmpeg program, whose
// allocations come from fresh zeroed pages, gives the same bytes every run. glibc's M_PERTURB fills every
// allocation made while it is set with one byte value, so what x264 reads there is the same in every run: the
// same frames make the same MP4 (what an exact regression comparison of two runs needs). Set for the encoder's
// life only (a memset per allocation), and process-wide as mallopt is; reset to 0 after (a MALLOC_PERTURB_
// the user set is not restored).
class SameBytesFromAllocations {
 public:
  SameBytesFromAllocations() {
#ifdef __GLIBC__
    mallopt(M_PERTURB, 0x5a);
#endif
  }
  ~SameBytesFromAllocations() {
#ifdef __GLIBC__
    mallopt(M_PERTURB, 0);
#endif
  }
  SameBytesFromAllocations(const SameBytesFromAllocations&) = delete;
  SameBytesFromAllocations& operator=(const SameBytesFromAllocations&) = delete;
};

// The muxer for `path`'s extension when it can hold H.264; MP4 when the extension names no known container.
const AVOutputFormat* output_format_for(const std::string& path) {
  const AVOutputFormat* guessed = av_guess_format(nullptr, path.c_str(), nullptr);
  if (!guessed) return av_guess_format("mp4", nullptr, nullptr);
  OMNI_CHECK_USAGE(avformat_query_codec(guessed, AV_CODEC_ID_H264, FF_COMPLIANCE_NORMAL) == 1, "output '", path,
                   "': the '", guessed->name, "' container cannot hold H.264 video; use .mp4, .mkv or .mov");
  return guessed;
}

void drain_packets(Encoder& enc, AVCodecContext* codec, AVStream* stream, const std::string& path) {
  while (true) {
    int rc = avcodec_receive_packet(codec, enc.packet);
    if (rc == AVERROR(EAGAIN) || rc == AVERROR_EOF) return;
    OMNI_CHECK(rc >= 0, "encoding ", path, ": avcodec_receive_packet failed: ", av_error_string(rc));
    av_packet_rescale_ts(enc.packet, codec->time_base, stream->time_base);
    enc.packet->stream_index = stream->index;
    rc = av_interleaved_write_frame(enc.fmt, enc.packet);  // takes ownership of the packet's data
    OMNI_CHECK(rc >= 0, "writing ", path, ": av_interleaved_write_frame failed: ", av_error_string(rc));
  }
}

// The AAC sound track: its encoder and stream, and the samples still to encode. The track is resampled to 48 kHz
// when AAC has no such rate, and cut or padded with silence to the video's duration.
class SoundTrack {
 public:
  SoundTrack(Encoder& enc, const AudioTrack& track, double video_seconds, const std::string& path)
      : enc_(enc), path_(path) {
    OMNI_CHECK(track.channels > 0 && track.sample_rate > 0 && track.samples.size() % track.channels == 0,
               "write_video: a sound track of ", track.channels, " channels at ", track.sample_rate, " Hz with ",
               track.samples.size(), " samples");
    const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_AAC);
    OMNI_CHECK(codec, "this FFmpeg build has no AAC encoder");
    channels_ = track.channels;
    bool supported = false;
    for (const int* r = codec->supported_samplerates; r && *r; ++r) supported = supported || *r == track.sample_rate;
    rate_ = supported ? track.sample_rate : 48000;
    // Planar float, the AAC encoder's format: [channel][frame], the video's duration long.
    total_ = std::llround(video_seconds * rate_);
    planes_.assign(channels_, std::vector<float>(total_, 0.0f));
    for (int c = 0; c < channels_; ++c) {
      std::vector<float> channel(track.frames());
      for (int64_t i = 0; i < track.frames(); ++i) channel[i] = track.samples[i * channels_ + c];
      if (!supported) channel = resample_audio(channel, track.sample_rate, rate_);
      std::copy_n(channel.begin(), std::min<int64_t>(total_, channel.size()), planes_[c].begin());
    }

    enc.audio_codec = avcodec_alloc_context3(codec);
    OMNI_CHECK(enc.audio_codec, "avcodec_alloc_context3 failed");
    AVCodecContext* ctx = enc.audio_codec;
    ctx->sample_fmt = AV_SAMPLE_FMT_FLTP;
    ctx->sample_rate = rate_;
    av_channel_layout_default(&ctx->ch_layout, channels_);
    ctx->bit_rate = std::min(64000 * channels_, 320000);
    ctx->time_base = AVRational{1, rate_};
    if (enc.fmt->oformat->flags & AVFMT_GLOBALHEADER) ctx->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    int rc = avcodec_open2(ctx, codec, nullptr);
    OMNI_CHECK(rc >= 0, "cannot open the AAC encoder for ", channels_, " channels at ", rate_,
               " Hz: ", av_error_string(rc));
    stream_ = avformat_new_stream(enc.fmt, nullptr);
    OMNI_CHECK(stream_, "avformat_new_stream failed");
    rc = avcodec_parameters_from_context(stream_->codecpar, ctx);
    OMNI_CHECK(rc >= 0, "avcodec_parameters_from_context failed: ", av_error_string(rc));
    stream_->time_base = ctx->time_base;
    enc.audio_frame = av_frame_alloc();
    OMNI_CHECK(enc.audio_frame, "av_frame_alloc failed");
  }

  // Encodes the samples before `seconds` (all of them when negative), so that the muxer gets sound and picture
  // in time order.
  void encode_until(double seconds) {
    const int64_t until = seconds < 0 ? total_ : std::min<int64_t>(total_, std::llround(seconds * rate_));
    AVCodecContext* ctx = enc_.audio_codec;
    const int frame_size = ctx->frame_size > 0 ? ctx->frame_size : 1024;
    while (next_ < until) {
      // Whole encoder frames only, but for the last one: the encoder takes a short frame only at the end.
      if (until < total_ && until - next_ < frame_size) return;
      const int n = static_cast<int>(std::min<int64_t>(frame_size, total_ - next_));
      AVFrame* frame = enc_.audio_frame;
      av_frame_unref(frame);
      frame->format = AV_SAMPLE_FMT_FLTP;
      frame->sample_rate = rate_;
      frame->nb_samples = n;
      int rc = av_channel_layout_copy(&frame->ch_layout, &ctx->ch_layout);
      OMNI_CHECK(rc >= 0, "av_channel_layout_copy failed: ", av_error_string(rc));
      rc = av_frame_get_buffer(frame, 0);
      OMNI_CHECK(rc >= 0, "av_frame_get_buffer failed: ", av_error_string(rc));
      for (int c = 0; c < channels_; ++c)
        std::copy_n(planes_[c].begin() + next_, n, reinterpret_cast<float*>(frame->extended_data[c]));
      frame->pts = next_;
      rc = avcodec_send_frame(ctx, frame);
      OMNI_CHECK(rc >= 0, "encoding the sound of ", path_, ": avcodec_send_frame failed: ", av_error_string(rc));
      drain_packets(enc_, ctx, stream_, path_);
      next_ += n;
    }
  }

  void finish() {
    encode_until(-1);
    const int rc = avcodec_send_frame(enc_.audio_codec, nullptr);  // the encoder's lookahead
    OMNI_CHECK(rc >= 0, "flushing the AAC encoder for ", path_, " failed: ", av_error_string(rc));
    drain_packets(enc_, enc_.audio_codec, stream_, path_);
  }

 private:
  Encoder& enc_;
  const std::string& path_;
  AVStream* stream_ = nullptr;
  int channels_ = 0, rate_ = 0;
  int64_t total_ = 0, next_ = 0;
  std::vector<std::vector<float>> planes_;
};

}  // namespace

at::Tensor frames_to_uint8(const at::Tensor& frames, int64_t chunk_samples) {
  OMNI_CHECK(frames.defined() && at::isFloatingType(frames.scalar_type()),
             "frames_to_uint8: frames must be floating point, got ",
             frames.defined() ? c10::toString(frames.scalar_type()) : "an undefined tensor");
  OMNI_CHECK(chunk_samples > 0, "frames_to_uint8: chunk_samples must be positive, got ", chunk_samples);
  const at::Tensor x = frames.detach();
  if (x.dim() == 0 || x.numel() == 0) return x.to(at::kFloat).clamp(0.0, 1.0).mul(255.0).round().to(at::kByte);
  at::Tensor out = at::empty(x.sizes(), x.options().dtype(at::kByte));  // contiguous, on the frames' device
  // Pieces along the first dimension longer than 1: the frames of [F, H, W, 3] and of the pipeline's
  // [1, F, H, W, 3] alike.
  int64_t dim = 0;
  while (dim + 1 < x.dim() && x.size(dim) == 1) ++dim;
  const int64_t per_slice = x.numel() / x.size(dim);
  const int64_t step = std::max<int64_t>(1, chunk_samples / per_slice);
  for (int64_t i = 0; i < x.size(dim); i += step) {
    const int64_t n = std::min(step, x.size(dim) - i);
    // A float32 copy (never an alias of the caller's float32 frames) that the steps then change in place: the
    // same operations, in the same order and dtype, as out of place.
    at::Tensor piece = x.narrow(dim, i, n).to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
    out.narrow(dim, i, n).copy_(piece.clamp_(0.0, 1.0).mul_(255.0).round_());  // float32 levels -> uint8, exact
  }
  return out;
}

void check_output_writable(const std::string& path, bool overwrite) {
  OMNI_CHECK_USAGE(!path.empty(), "the output path is empty; give a file name such as output.mp4");
  OMNI_CHECK_USAGE(path.back() != '/', "output '", path, "' names a folder; give a file name such as ", path,
                   "output.mp4");
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  OMNI_CHECK_USAGE(!(exists && S_ISDIR(st.st_mode)), "output '", path, "' is a folder; give a file name such as ", path,
                   "/output.mp4");
  const std::string dir = parent_dir(path);
  struct stat dst;
  if (::stat(dir.c_str(), &dst) != 0) {
    int err = errno;
    OMNI_FAIL_USAGE("output folder '", dir, "' for '", path, "' ",
                    err == ENOENT    ? std::string("does not exist; create it first")
                    : err == ENOTDIR ? std::string("is not a folder (part of its path is a file)")
                                     : std::string("cannot be accessed: ") + std::strerror(err));
  }
  OMNI_CHECK_USAGE(S_ISDIR(dst.st_mode), "output folder '", dir, "' for '", path, "' is not a folder");
  OMNI_CHECK_USAGE(!exists || overwrite, "output file '", path, "' already exists; pass --overwrite to replace it");
  OMNI_CHECK_USAGE(::access(dir.c_str(), W_OK | X_OK) == 0, "output folder '", dir, "' is not writable (",
                   std::strerror(errno), ")");
  // access() says yes to root and knows nothing of read-only mounts: create a file to be sure.
  const std::string probe = temp_sibling(path, "probe");
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  OMNI_CHECK_USAGE(fd >= 0, "cannot create files in output folder '", dir, "' (", std::strerror(errno), ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_video(const std::string& path, const at::Tensor& frames, const VideoWriteOptions& options) {
  OMNI_CHECK(frames.defined() && frames.dim() == 4 && frames.size(3) == 3,
             "write_video: frames must be [F, H, W, 3], got ", frames.defined() ? frames.sizes() : at::IntArrayRef{});
  const int64_t num_frames = frames.size(0), height = frames.size(1), width = frames.size(2);
  OMNI_CHECK(num_frames > 0 && height > 0 && width > 0, "write_video: empty video ", frames.sizes());
  OMNI_CHECK_USAGE(height % 2 == 0 && width % 2 == 0, "output '", path, "': H.264 in yuv420p needs an even width ",
                   "and height, got ", width, "x", height);
  OMNI_CHECK_USAGE(options.fps_num > 0 && options.fps_den > 0, "--fps must be positive, got ", options.fps_num, "/",
                   options.fps_den);
  OMNI_CHECK_USAGE(options.crf >= 0 && options.crf <= 51, "--crf must be in [0, 51], got ", options.crf);
  for (const auto& kv : options.metadata) OMNI_CHECK(!kv.first.empty(), "write_video: a metadata key is empty");
  check_output_writable(path, options.overwrite);
  quiet_libav_logs();

  // [F, H, W, 3] uint8 on the host; float frames become levels on their device, so that one byte per sample
  // crosses to the host.
  OMNI_CHECK(frames.scalar_type() == at::kByte || at::isFloatingType(frames.scalar_type()),
             "write_video: frames must be uint8 levels or floating point in [0, 1], got ", frames.scalar_type());
  const at::Tensor levels = frames.scalar_type() == at::kByte ? frames.detach() : frames_to_uint8(frames);
  const at::Tensor rgb = levels.to(at::kCPU).contiguous();

  const AVOutputFormat* ofmt = output_format_for(path);
  TempFile tmp(temp_sibling(path, "partial"));
  {
    // Reserve the name with the usual permissions (0666 less umask); the muxer then truncates and fills it.
    int fd = ::open(tmp.path().c_str(), O_WRONLY | O_CREAT | O_EXCL, 0666);
    OMNI_CHECK_USAGE(fd >= 0, "cannot create '", tmp.path(), "' for output '", path, "': ", std::strerror(errno));
    ::close(fd);
  }

  const SameBytesFromAllocations same_bytes;  // outlives `enc`: every allocation of the encoder's life
  Encoder enc;
  int rc = avformat_alloc_output_context2(&enc.fmt, ofmt, nullptr, tmp.path().c_str());
  OMNI_CHECK(rc >= 0 && enc.fmt, "cannot set up the ", ofmt->name, " muxer: ", av_error_string(rc));

  const AVCodec* codec = avcodec_find_encoder_by_name("libx264");
  OMNI_CHECK(codec, "this FFmpeg build has no libx264 encoder (Debian: libavcodec59 with x264)");
  enc.codec = avcodec_alloc_context3(codec);
  OMNI_CHECK(enc.codec, "avcodec_alloc_context3 failed");
  enc.codec->width = static_cast<int>(width);
  enc.codec->height = static_cast<int>(height);
  enc.codec->pix_fmt = AV_PIX_FMT_YUV420P;
  enc.codec->time_base = AVRational{options.fps_den, options.fps_num};
  enc.codec->framerate = AVRational{options.fps_num, options.fps_den};
  // BT.601 limited-range matrix, tagged so: what FFmpeg's tools (and imageio / diffusers' export_to_video, which
  // pipe through them) use to turn RGB into Y'CbCr and back whatever the tag says, and what tag-reading players
  // then agree with. Primaries and transfer are sRGB's (= BT.709's).
  enc.codec->color_range = AVCOL_RANGE_MPEG;
  enc.codec->colorspace = AVCOL_SPC_SMPTE170M;
  enc.codec->color_primaries = AVCOL_PRI_BT709;
  enc.codec->color_trc = AVCOL_TRC_BT709;
  if (enc.fmt->oformat->flags & AVFMT_GLOBALHEADER) enc.codec->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  // x264's output depends on its thread count; a fixed count (with SameBytesFromAllocations) makes the same
  // frames the same bytes on any machine (regression comparisons), at a cost that is small next to the diffusion
  // itself.
  enc.codec->thread_count = 4;

  AVDictionary* codec_opts = nullptr;
  av_dict_set(&codec_opts, "crf", std::to_string(options.crf).c_str(), 0);
  av_dict_set(&codec_opts, "preset", options.preset.c_str(), 0);
  rc = avcodec_open2(enc.codec, codec, &codec_opts);
  av_dict_free(&codec_opts);
  OMNI_CHECK_USAGE(rc >= 0, "cannot open the libx264 encoder for ", width, "x", height, " (preset '", options.preset,
                   "', crf ", options.crf, "): ", av_error_string(rc));

  AVStream* stream = avformat_new_stream(enc.fmt, nullptr);
  OMNI_CHECK(stream, "avformat_new_stream failed");
  rc = avcodec_parameters_from_context(stream->codecpar, enc.codec);
  OMNI_CHECK(rc >= 0, "avcodec_parameters_from_context failed: ", av_error_string(rc));
  stream->time_base = enc.codec->time_base;  // a hint; the muxer may choose a finer one
  stream->avg_frame_rate = enc.codec->framerate;
  stream->r_frame_rate = enc.codec->framerate;

  std::optional<SoundTrack> sound;  // after the video stream: stream 0 is the picture, as players expect
  if (options.audio)
    sound.emplace(enc, *options.audio, static_cast<double>(num_frames) * options.fps_den / options.fps_num, path);

  for (const auto& kv : options.metadata) av_dict_set(&enc.fmt->metadata, kv.first.c_str(), kv.second.c_str(), 0);

  rc = avio_open(&enc.fmt->pb, tmp.path().c_str(), AVIO_FLAG_WRITE);
  OMNI_CHECK(rc >= 0, "cannot open '", tmp.path(), "' for writing: ", av_error_string(rc));
  AVDictionary* mux_opts = nullptr;
  const std::string muxer = enc.fmt->oformat->name;
  if (muxer == "mp4" || muxer == "mov") {
    // use_metadata_tags stores every key (the MP4 default keeps only iTunes' fixed set, dropping e.g. "prompt");
    // faststart puts the index first so that players can start before the whole file has arrived.
    av_dict_set(&mux_opts, "movflags", "+faststart+use_metadata_tags", 0);
  }
  rc = avformat_write_header(enc.fmt, &mux_opts);
  av_dict_free(&mux_opts);
  OMNI_CHECK(rc >= 0, "writing the header of ", path, " failed: ", av_error_string(rc));

  enc.sws = sws_getContext(static_cast<int>(width), static_cast<int>(height), AV_PIX_FMT_RGB24, static_cast<int>(width),
                           static_cast<int>(height), AV_PIX_FMT_YUV420P,
                           SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INP, nullptr, nullptr, nullptr);
  OMNI_CHECK(enc.sws, "sws_getContext rgb24 -> yuv420p failed for ", width, "x", height);
  // RGB (full range) -> BT.601 limited range, matching the tags set on the stream above.
  const int* bt601 = sws_getCoefficients(SWS_CS_SMPTE170M);
  sws_setColorspaceDetails(enc.sws, bt601, 1, bt601, 0, 0, 1 << 16, 1 << 16);

  enc.frame = av_frame_alloc();
  enc.packet = av_packet_alloc();
  OMNI_CHECK(enc.frame && enc.packet, "av_frame_alloc / av_packet_alloc failed");
  enc.frame->format = AV_PIX_FMT_YUV420P;
  enc.frame->width = static_cast<int>(width);
  enc.frame->height = static_cast<int>(height);
  rc = av_frame_get_buffer(enc.frame, 0);
  OMNI_CHECK(rc >= 0, "av_frame_get_buffer failed: ", av_error_string(rc));

  const uint8_t* base = rgb.data_ptr<uint8_t>();
  const int src_stride[1] = {static_cast<int>(width * 3)};
  for (int64_t f = 0; f < num_frames; ++f) {
    rc = av_frame_make_writable(enc.frame);  // the encoder may still hold the previous frame's buffers
    OMNI_CHECK(rc >= 0, "av_frame_make_writable failed: ", av_error_string(rc));
    const uint8_t* src[1] = {base + f * height * width * 3};  // frame f of [F, H, W, 3]
    sws_scale(enc.sws, src, src_stride, 0, static_cast<int>(height), enc.frame->data, enc.frame->linesize);
    enc.frame->pts = f;
    rc = avcodec_send_frame(enc.codec, enc.frame);
    OMNI_CHECK(rc >= 0, "encoding frame ", f, " of ", path, ": avcodec_send_frame failed: ", av_error_string(rc));
    drain_packets(enc, enc.codec, stream, path);
    if (sound) sound->encode_until(static_cast<double>(f + 1) * options.fps_den / options.fps_num);
  }
  rc = avcodec_send_frame(enc.codec, nullptr);  // flush the frames x264 holds for lookahead / B-frames
  OMNI_CHECK(rc >= 0, "flushing the encoder for ", path, " failed: ", av_error_string(rc));
  drain_packets(enc, enc.codec, stream, path);
  if (sound) sound->finish();
  rc = av_write_trailer(enc.fmt);
  OMNI_CHECK(rc >= 0, "writing the trailer of ", path, " failed: ", av_error_string(rc));
  rc = avio_closep(&enc.fmt->pb);
  OMNI_CHECK(rc >= 0, "closing ", tmp.path(), " failed: ", av_error_string(rc));

  // The data must be on disk before the rename makes the file visible under its final name.
  int fd = ::open(tmp.path().c_str(), O_RDONLY);
  OMNI_CHECK(fd >= 0, "cannot reopen '", tmp.path(), "': ", std::strerror(errno));
  const int sync_rc = ::fsync(fd);
  const int sync_err = errno;
  ::close(fd);
  OMNI_CHECK(sync_rc == 0, "cannot sync '", tmp.path(), "': ", std::strerror(sync_err));
  if (options.before_commit) options.before_commit();
  commit_file(tmp.path(), path, options.overwrite);
  tmp.committed();
  OMNI_DEBUG("wrote ", path, ": ", num_frames, " frames ", width, "x", height, " at ", options.fps_num, "/",
             options.fps_den, " fps, crf ", options.crf);
}

}  // namespace omni::io
