// H.264 MP4 output through libavformat / libavcodec (libx264, yuv420p).
//
// The file appears only when it is complete: frames are encoded into a temporary file in the output folder,
// which is renamed onto the final path at the end, so an interrupted run never leaves a partial video behind.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <string>

namespace omni::io {

struct VideoWriteOptions {
  // Frame rate as a rational fps_num / fps_den (16/1 for Wan2.2 A14B, 24/1 for TI2V-5B).
  int fps_num = 16;
  int fps_den = 1;
  // x264 constant rate factor: 0 lossless (still 4:2:0), 18 visually transparent, 23 x264's default, 51 worst.
  int crf = 18;
  std::string preset = "medium";  // x264 speed preset
  bool overwrite = false;         // replace an existing file at the path
  // String key/values stored in the container (title, comment, or any custom key such as "prompt", "seed").
  std::map<std::string, std::string> metadata;
  // Runs once the video is complete on disk under its temporary name, just before the rename that publishes it
  // (the sidecar is written here, so that a video's sidecar exists whenever the video does and a run killed
  // while encoding leaves neither).
  std::function<void()> before_commit;
};

// Checks, before any expensive work, that `path` can be written: its folder exists, is a folder and is writable
// (probed by creating and removing a file there), `path` is not a folder, and, unless `overwrite`, no file exists
// at `path`. Every failure is a usage error (exit 2) with one line naming the path (and --overwrite where it helps).
void check_output_writable(const std::string& path, bool overwrite);

// Encodes `frames` [F, H, W, 3] (float in [0, 1], any device; values are clamped) as H.264 in the container
// that the extension names (.mp4 / .mov / .mkv; anything else is written as MP4), atomically. RGB is converted
// to BT.601 limited-range Y'CbCr 4:2:0 and the stream is tagged so (smpte170m): FFmpeg's tools decode with that
// matrix whatever the tag, as diffusers' export_to_video encodes, and players that read tags agree.
// H and W must be even (4:2:0 subsampling): an odd size is a usage error. Repeats check_output_writable first.
void write_video(const std::string& path, const at::Tensor& frames, const VideoWriteOptions& options);

}  // namespace omni::io
