// Video input through libavformat / libavcodec: any video FFmpeg can read, decoded to RGB frames.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <string>

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
  std::map<std::string, std::string> metadata;  // container-level tags (title, comment, custom keys, encoder)
};

struct Video {
  at::Tensor frames;  // [F, H, W, 3] float32 in [0, 1], RGB, CPU
  VideoInfo info;
};

// Decodes the best video stream of `path` (at most `max_frames` frames when >= 0). A missing, unreadable or
// undecodable file, or one without a video stream, is an input error (exit 3) naming the file.
Video read_video(const std::string& path, int64_t max_frames = -1);

}  // namespace omni::io
