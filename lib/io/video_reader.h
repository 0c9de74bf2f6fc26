// Video input through libavformat / libavcodec: any video FFmpeg can read, decoded to RGB frames.
//
// Two conversions to RGB. kAccurate (omni-compare): full chroma interpolation and accurate rounding, the
// closest RGB to what was encoded. kAsFfmpeg (video-to-video input): what `ffmpeg -i FILE -pix_fmt rgb24` gives,
// the bytes diffusers' load_video reads through imageio: the scale filter's defaults (bicubic flags, the frame's
// matrix and range, BT.601 when unspecified) and the stream's display rotation applied as the CLI's autorotate
// does (90, 180, 270 degrees).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace omni::io {

struct VideoInfo {
  std::string codec;         // decoder name as ffprobe prints codec_name: "h264", "hevc", "vp9", ...
  std::string pixel_format;  // as ffprobe prints pix_fmt: "yuv420p", ...
  int width = 0;
  int height = 0;
  int64_t frame_count = 0;  // frames actually decoded (ffprobe's nb_read_frames)
  // Frame rate as FFmpeg guesses it (r_frame_rate, else avg_frame_rate), e.g. 16/1 or 30000/1001.
  int fps_num = 0;
  int fps_den = 1;
  double fps() const { return fps_den ? static_cast<double>(fps_num) / fps_den : 0.0; }
  std::string color_space;  // "bt709", "bt470bg", "unknown", ... (what the decoder used for Y'CbCr -> RGB)
  std::string color_range;  // "tv" (limited) or "pc" (full); "unknown" is decoded as limited
  int rotation = 0;         // degrees clockwise the display matrix turns the picture (0, 90, 180, 270)
  std::map<std::string, std::string> metadata;  // container-level tags (title, comment, custom keys, encoder)
};

struct Video {
  at::Tensor frames;  // [F, H, W, 3] float32 in [0, 1], RGB, CPU
  VideoInfo info;
};

enum class RgbConversion { kAccurate, kAsFfmpeg };

struct VideoLevels {
  at::Tensor frames;  // [F, H, W, 3] uint8, RGB, CPU
  VideoInfo info;
};

// Decodes the best video stream of `path` (at most `max_frames` frames when >= 0), keeping the frames from
// `first_frame` on (those before are decoded, not kept: info.frame_count counts them). A missing, unreadable or
// undecodable file, or one without a video stream, is an input error (exit 3) naming the file.
VideoLevels read_video_levels(const std::string& path, int64_t max_frames = -1,
                              RgbConversion conversion = RgbConversion::kAccurate, int64_t first_frame = 0);
// Frames [first, first + count) of `path` (kAsFfmpeg): an input error when it has fewer.
VideoLevels read_video_range(const std::string& path, int64_t first, int64_t count);
// The frame rate FFmpeg guesses for the video stream (VideoInfo::fps), from its parameters; 0 when unknown.
double video_frame_rate(const std::string& path);
// The same as float32 in [0, 1] (kAccurate).
Video read_video(const std::string& path, int64_t max_frames = -1);

// The {height, width} of read_video_levels(path, ..., kAsFfmpeg)'s frames (the display rotation applied), from
// the stream's parameters: no frame is converted. Input errors as read_video's.
std::pair<int64_t, int64_t> video_size(const std::string& path);

// The packets of the video stream of `path`, read without decoding: its frame count for the codecs cameras and
// editors write (one frame per packet). Input errors as read_video's.
int64_t video_packet_count(const std::string& path);

// The first `num_frames` frames of `path` (kAsFfmpeg); a video with fewer is an input error naming both numbers.
VideoLevels read_clip_frames(const std::string& path, int64_t num_frames);

// The conditioning clip of a video-to-video run as diffusers' VideoProcessor.preprocess_video(load_video(path)
// [:num_frames], height, width) gives it: the first `num_frames` frames (kAsFfmpeg), each resized as
// load_conditioning_image resizes an image, as [1, 3, num_frames, height, width] float32 in [-1, 1] on the CPU.
// A video with fewer frames is an input error naming both numbers.
at::Tensor load_conditioning_video(const std::string& path, int64_t num_frames, int64_t height, int64_t width);

// Wan2.2-Animate's inputs: the given frames of `path` (any order, repeats allowed; those between the first and
// the last decoded), each resized to height x width as load_conditioning_video's (LANCZOS): [1, 3, n, H, W]
// float32 in [-1, 1]; with `luma` a mask as diffusers' grey-scale VideoProcessor makes it, resized in RGB, then
// Pillow's luma, x / 255: [1, 1, n, H, W] in [0, 1].
at::Tensor load_video_frames(const std::string& path, const std::vector<int64_t>& frames, int64_t height, int64_t width,
                             bool luma = false);

}  // namespace omni::io
