#include "io/video_reader.h"

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/dict.h>
#include <libavutil/display.h>
#include <libavutil/frame.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>
}

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/error.h"
#include "io/image_reader.h"
#include "io/video_common.h"

namespace omni::io {
namespace {

struct Decoder {
  AVFormatContext* fmt = nullptr;
  AVCodecContext* codec = nullptr;
  SwsContext* sws = nullptr;
  AVFrame* frame = nullptr;
  AVPacket* packet = nullptr;
  ~Decoder() {
    av_packet_free(&packet);
    av_frame_free(&frame);
    sws_freeContext(sws);
    avcodec_free_context(&codec);
    avformat_close_input(&fmt);
  }
};

// swscale's coefficient table for the stream's matrix; unspecified streams get BT.601, as FFmpeg's tools do.
int sws_colorspace(AVColorSpace space) {
  switch (space) {
    case AVCOL_SPC_BT709:
      return SWS_CS_ITU709;
    case AVCOL_SPC_FCC:
      return SWS_CS_FCC;
    case AVCOL_SPC_SMPTE240M:
      return SWS_CS_SMPTE240M;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
      return SWS_CS_BT2020;
    default:
      return SWS_CS_ITU601;
  }
}

bool is_full_range(const AVFrame* frame) {
  if (frame->color_range == AVCOL_RANGE_JPEG) return true;
  switch (frame->format) {  // the deprecated "J" formats are full range whatever the tag says
    case AV_PIX_FMT_YUVJ420P:
    case AV_PIX_FMT_YUVJ422P:
    case AV_PIX_FMT_YUVJ444P:
    case AV_PIX_FMT_YUVJ440P:
      return true;
    default:
      return false;
  }
}

// The rotation FFmpeg's command line applies to `stream` (fftools' get_rotation: the display matrix's angle,
// negated, rounded and brought into [0, 360)), snapped to a quarter turn; 0 without a matrix.
int display_rotation(const AVStream* stream) {
  const uint8_t* matrix = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, nullptr);
  if (matrix == nullptr) return 0;
  double theta = -std::round(av_display_rotation_get(reinterpret_cast<const int32_t*>(matrix)));
  theta -= 360 * std::floor(theta / 360 + 0.9 / 360);
  for (int quarter : {90, 180, 270})
    if (std::fabs(theta - quarter) < 1.0) return quarter;
  return 0;  // another angle: the command line would rotate by it (with black corners); not applied here
}

class FrameConverter {
 public:
  FrameConverter(Decoder& dec, const std::string& path, RgbConversion conversion)
      : dec_(dec), path_(path), conversion_(conversion) {}

  // Appends `frame` as packed RGB24 to `out`.
  void convert(const AVFrame* frame, std::vector<uint8_t>& out, VideoInfo& info) {
    if (!dec_.sws) {
      width_ = frame->width;
      height_ = frame->height;
      format_ = frame->format;
      const bool accurate = conversion_ == RgbConversion::kAccurate;
      // kAccurate: full chroma interpolation and accurate rounding, the closest RGB to what was encoded.
      // kAsFfmpeg: the command line's scale filter (its sws_flags default, bicubic; the fast converters).
      const int flags = accurate ? SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT : SWS_BICUBIC;
      dec_.sws = sws_getContext(width_, height_, static_cast<AVPixelFormat>(format_), width_, height_, AV_PIX_FMT_RGB24,
                                flags, nullptr, nullptr, nullptr);
      OMNI_CHECK_INPUT(dec_.sws, path_, ": cannot convert pixel format ",
                       av_get_pix_fmt_name(static_cast<AVPixelFormat>(format_)), " to RGB");
      const int* table = sws_getCoefficients(sws_colorspace(frame->colorspace));
      // Y'CbCr -> RGB: the source range from the frame (srcRange). The scale filter leaves dstRange at the
      // context's own 0 for an RGB output, where kAccurate asks for full range; swscale's RGB output is full
      // range either way.
      sws_setColorspaceDetails(dec_.sws, table, is_full_range(frame) ? 1 : 0, table, accurate ? 1 : 0, 0, 1 << 16,
                               1 << 16);
      info.color_space = av_color_space_name(frame->colorspace) ? av_color_space_name(frame->colorspace) : "unknown";
      info.color_range = av_color_range_name(frame->color_range) ? av_color_range_name(frame->color_range) : "unknown";
    }
    OMNI_CHECK_INPUT(frame->width == width_ && frame->height == height_ && frame->format == format_, path_,
                     ": frame size or format changes mid-stream (", width_, "x", height_, " -> ", frame->width, "x",
                     frame->height, "); not supported");
    // swscale's converters write whole SIMD blocks past a row's last pixel (FFmpeg's own frames are padded for
    // it): convert into rows of a 64-byte-aligned stride with a block to spare, then pack them.
    const int row = width_ * 3;
    const int stride = (row + 63) / 64 * 64;
    padded_.resize(static_cast<size_t>(stride) * height_ + 64);
    uint8_t* dst[1] = {padded_.data()};
    const int dst_stride[1] = {stride};
    sws_scale(dec_.sws, frame->data, frame->linesize, 0, height_, dst, dst_stride);
    const size_t offset = out.size();
    out.resize(offset + static_cast<size_t>(row) * height_);
    for (int y = 0; y < height_; ++y)
      std::memcpy(out.data() + offset + static_cast<size_t>(y) * row, padded_.data() + static_cast<size_t>(y) * stride,
                  static_cast<size_t>(row));
  }
  int width() const { return width_; }
  int height() const { return height_; }

 private:
  Decoder& dec_;
  const std::string& path_;
  RgbConversion conversion_;
  int width_ = 0, height_ = 0, format_ = -1;
  std::vector<uint8_t> padded_;  // one converted frame, rows at an aligned stride
};

// Opens `path` into `dec` and finds its best video stream (its index; `codec` its decoder).
int open_video(const std::string& path, Decoder& dec, const AVCodec** codec) {
  struct stat st;
  OMNI_CHECK_INPUT(::stat(path.c_str(), &st) == 0, "video '", path, "' cannot be read: ", std::strerror(errno));
  OMNI_CHECK_INPUT(!S_ISDIR(st.st_mode), "video '", path, "' is a folder, not a video file");
  quiet_libav_logs();
  int rc = avformat_open_input(&dec.fmt, path.c_str(), nullptr, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "video '", path, "' cannot be opened: ", av_error_string(rc));
  rc = avformat_find_stream_info(dec.fmt, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "video '", path, "': cannot read stream information: ", av_error_string(rc));
  const int index = av_find_best_stream(dec.fmt, AVMEDIA_TYPE_VIDEO, -1, -1, codec, 0);
  OMNI_CHECK_INPUT(index >= 0, "'", path, "' has no video stream",
                   index == AVERROR_DECODER_NOT_FOUND ? " that this FFmpeg build can decode" : "");
  return index;
}

// [F, H, W, 3] turned `degrees` clockwise, as the command line's transpose=clock / hflip,vflip /
// transpose=cclock.
at::Tensor rotate_frames(const at::Tensor& frames, int degrees) {
  switch (degrees) {
    case 90:
      return frames.transpose(1, 2).flip({2}).contiguous();  // out[i][j] = in[H - 1 - j][i]
    case 180:
      return frames.flip({1, 2}).contiguous();
    case 270:
      return frames.transpose(1, 2).flip({1}).contiguous();  // out[i][j] = in[j][W - 1 - i]
    default:
      return frames;
  }
}

}  // namespace

VideoLevels read_video_levels(const std::string& path, int64_t max_frames, RgbConversion conversion,
                              int64_t first_frame) {
  Decoder dec;
  const AVCodec* codec = nullptr;
  const int index = open_video(path, dec, &codec);
  AVStream* stream = dec.fmt->streams[index];
  int rc = 0;

  dec.codec = avcodec_alloc_context3(codec);
  OMNI_CHECK(dec.codec, "avcodec_alloc_context3 failed");
  rc = avcodec_parameters_to_context(dec.codec, stream->codecpar);
  OMNI_CHECK(rc >= 0, "avcodec_parameters_to_context failed: ", av_error_string(rc));
  dec.codec->thread_count = 0;  // as many as FFmpeg sees fit
  rc = avcodec_open2(dec.codec, codec, nullptr);
  OMNI_CHECK_INPUT(rc >= 0, "video '", path, "': cannot open the ", codec->name, " decoder: ", av_error_string(rc));

  VideoLevels video;
  VideoInfo& info = video.info;
  info.codec = avcodec_get_name(stream->codecpar->codec_id);
  const char* pix = av_get_pix_fmt_name(static_cast<AVPixelFormat>(stream->codecpar->format));
  info.pixel_format = pix ? pix : "unknown";
  info.width = stream->codecpar->width;
  info.height = stream->codecpar->height;
  AVRational rate = av_guess_frame_rate(dec.fmt, stream, nullptr);
  info.fps_num = rate.num;
  info.fps_den = rate.den ? rate.den : 1;
  const AVDictionaryEntry* tag = nullptr;
  while ((tag = av_dict_get(dec.fmt->metadata, "", tag, AV_DICT_IGNORE_SUFFIX))) info.metadata[tag->key] = tag->value;

  dec.frame = av_frame_alloc();
  dec.packet = av_packet_alloc();
  OMNI_CHECK(dec.frame && dec.packet, "av_frame_alloc / av_packet_alloc failed");
  FrameConverter converter(dec, path, conversion);
  std::vector<uint8_t> rgb;
  auto done = [&] { return max_frames >= 0 && info.frame_count >= max_frames; };
  auto receive_all = [&] {
    while (!done()) {
      int r = avcodec_receive_frame(dec.codec, dec.frame);
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      OMNI_CHECK_INPUT(r >= 0, "video '", path, "': decoding frame ", info.frame_count,
                       " failed: ", av_error_string(r));
      const size_t before = rgb.size();
      converter.convert(dec.frame, rgb, info);
      if (info.frame_count < first_frame) rgb.resize(before);  // decoded, not kept
      ++info.frame_count;
      av_frame_unref(dec.frame);
    }
  };
  while (!done()) {
    rc = av_read_frame(dec.fmt, dec.packet);
    if (rc == AVERROR_EOF) break;
    OMNI_CHECK_INPUT(rc >= 0, "video '", path, "': reading a packet failed: ", av_error_string(rc));
    if (dec.packet->stream_index == index) {
      // EAGAIN: the decoder wants its pending frames taken first; then the same packet goes in again.
      while ((rc = avcodec_send_packet(dec.codec, dec.packet)) == AVERROR(EAGAIN) && !done()) {
        const int64_t before = info.frame_count;
        receive_all();
        if (info.frame_count == before) break;  // no progress: reported below
      }
      av_packet_unref(dec.packet);
      OMNI_CHECK_INPUT(rc >= 0 || done(), "video '", path, "': corrupt packet after frame ", info.frame_count, ": ",
                       av_error_string(rc));
      receive_all();
    } else {
      av_packet_unref(dec.packet);
    }
  }
  if (!done()) {
    avcodec_send_packet(dec.codec, nullptr);  // drain the frames the decoder still holds (reordering delay)
    receive_all();
  }
  OMNI_CHECK_INPUT(info.frame_count > 0 || max_frames == 0, "video '", path, "' has no decodable frames");
  if (info.frame_count > 0) {  // the decoded size is the one that counts (the container's may differ)
    info.width = converter.width();
    info.height = converter.height();
  }
  const int64_t kept = std::max<int64_t>(0, info.frame_count - first_frame);
  video.frames = at::from_blob(rgb.data(), {kept, info.height, info.width, 3}, at::kByte).clone();
  if (conversion == RgbConversion::kAsFfmpeg) {
    info.rotation = display_rotation(stream);
    video.frames = rotate_frames(video.frames, info.rotation);  // [F, H, W, 3] upright
    if (info.rotation % 180 != 0) std::swap(info.width, info.height);
  }
  return video;
}

Video read_video(const std::string& path, int64_t max_frames) {
  VideoLevels levels = read_video_levels(path, max_frames, RgbConversion::kAccurate);
  Video video;
  video.info = levels.info;
  video.frames = levels.frames.to(at::kFloat).div_(255.0);  // [F, H, W, 3] in [0, 1]
  return video;
}

std::pair<int64_t, int64_t> video_size(const std::string& path) {
  Decoder dec;
  const AVCodec* codec = nullptr;
  const int index = open_video(path, dec, &codec);
  const AVStream* stream = dec.fmt->streams[index];
  const int64_t h = stream->codecpar->height, w = stream->codecpar->width;
  OMNI_CHECK_INPUT(h > 0 && w > 0, "video '", path, "': its stream has no picture size");
  return display_rotation(stream) % 180 != 0 ? std::make_pair(w, h) : std::make_pair(h, w);
}

double video_frame_rate(const std::string& path) {
  Decoder dec;
  const AVCodec* codec = nullptr;
  const int index = open_video(path, dec, &codec);
  const AVRational rate = av_guess_frame_rate(dec.fmt, dec.fmt->streams[index], nullptr);
  return rate.num > 0 && rate.den > 0 ? static_cast<double>(rate.num) / rate.den : 0.0;
}

VideoLevels read_video_range(const std::string& path, int64_t first, int64_t count) {
  VideoLevels video = read_video_levels(path, first + count, RgbConversion::kAsFfmpeg, first);
  OMNI_CHECK_INPUT(video.frames.size(0) == count, "video '", path, "' has ", video.info.frame_count, " frames; frames ",
                   first, " to ", first + count - 1, " were asked for");
  return video;
}

int64_t video_packet_count(const std::string& path) {
  Decoder dec;
  const AVCodec* codec = nullptr;
  const int index = open_video(path, dec, &codec);
  dec.packet = av_packet_alloc();
  OMNI_CHECK(dec.packet, "av_packet_alloc failed");
  int64_t count = 0;
  for (;;) {
    const int rc = av_read_frame(dec.fmt, dec.packet);
    if (rc == AVERROR_EOF) break;
    OMNI_CHECK_INPUT(rc >= 0, "video '", path, "': reading a packet failed: ", av_error_string(rc));
    count += dec.packet->stream_index == index ? 1 : 0;
    av_packet_unref(dec.packet);
  }
  return count;
}

VideoLevels read_clip_frames(const std::string& path, int64_t num_frames) {
  VideoLevels video = read_video_levels(path, num_frames, RgbConversion::kAsFfmpeg);
  OMNI_CHECK_INPUT(video.info.frame_count >= num_frames, "video '", path, "' has ", video.info.frame_count,
                   " frames; the video needs ", num_frames, " (--num-frames)");
  return video;
}

at::Tensor load_conditioning_video(const std::string& path, int64_t num_frames, int64_t height, int64_t width) {
  const VideoLevels video = read_clip_frames(path, num_frames);
  std::vector<at::Tensor> frames;
  for (int64_t f = 0; f < num_frames; ++f)
    frames.push_back(conditioning_image(video.frames[f], height, width));  // [1, 3, H, W]
  return at::stack(frames, 2);                                             // [1, 3, F, H, W]
}

at::Tensor load_video_frames(const std::string& path, const std::vector<int64_t>& frames, int64_t height, int64_t width,
                             bool luma) {
  OMNI_CHECK(!frames.empty(), "load_video_frames: no frames");
  const int64_t lo = *std::min_element(frames.begin(), frames.end());
  const int64_t hi = *std::max_element(frames.begin(), frames.end());
  const VideoLevels video = read_video_range(path, lo, hi - lo + 1);  // [n, h, w, 3] uint8
  std::vector<at::Tensor> out;
  for (const int64_t f : frames) {
    const at::Tensor frame = video.frames[f - lo];  // [h, w, 3]
    if (!luma) {
      out.push_back(conditioning_image(frame, height, width));  // [1, 3, H, W] in [-1, 1]
      continue;
    }
    // VideoProcessor(do_normalize=False, do_convert_grayscale=True): resized in RGB, then luma, x / 255.
    const at::Tensor resized =
        frame.size(0) == height && frame.size(1) == width ? frame : resize_image(frame, height, width);
    out.push_back(image_to_float(luma_levels(resized)).unsqueeze(0).unsqueeze(0));  // [1, 1, H, W] in [0, 1]
  }
  return at::stack(out, 2);  // [1, C, F, H, W]
}

}  // namespace omni::io
