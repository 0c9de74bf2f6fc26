// H.264 MP4 output through libavformat / libavcodec (libx264, yuv420p), with an optional AAC sound track.
//
// The file appears only when it is complete: frames are encoded into a temporary file in the output folder,
// which is renamed onto the final path at the end, so an interrupted run never leaves a partial video behind.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <map>
#include <string>

#include "io/audio_reader.h"

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
  // Sound to mux beside the frames (speech to video: the audio the frames were made from), or none. Encoded as
  // AAC (libavcodec's encoder, 64 kb/s per channel, at most 320 kb/s) at its own rate when AAC has that rate, else
  // resampled to 48 kHz; cut, or padded with silence, to the video's duration (frames / fps, to the sample), so
  // that sound and picture end together. Sample and frame times both start at 0: in sync.
  const AudioTrack* audio = nullptr;
};

// Checks, before any expensive work, that `path` can be written: its folder exists, is a folder and is writable
// (probed by creating and removing a file there), `path` is not a folder, and, unless `overwrite`, no file exists
// at `path`. Every failure is a usage error (exit 2) with one line naming the path (and --overwrite where it helps).
void check_output_writable(const std::string& path, bool overwrite);

// Frames in [0, 1] (any floating dtype, any device; [F, H, W, 3] or any shape) as uint8 levels, on the frames'
// device: float32, clamped to [0, 1], times 255, rounded half to even (torch.round), so that a video leaves the
// device as one byte per sample. diffusers' export_to_video truncates instead; rounding halves the bias. Converts
// at most 64 Mi samples at a time (whole slices along the first dimension longer than 1, the frames), bounding
// the float32 temporary on the device. The only place
// frames become levels: the pipeline calls it where the decoded video is, write_video on float input.
// `chunk_samples` bounds a piece (tests make it small to cut a small video into pieces).
constexpr int64_t kLevelsChunkSamples = int64_t{64} << 20;  // a 256 MiB float32 temporary
at::Tensor frames_to_uint8(const at::Tensor& frames, int64_t chunk_samples = kLevelsChunkSamples);

// Encodes `frames` [F, H, W, 3] (uint8 levels as frames_to_uint8 makes them, or float in [0, 1] that it converts
// on their device; any device) as H.264 in the container
// that the extension names (.mp4 / .mov / .mkv; anything else is written as MP4), atomically. RGB is converted
// to BT.601 limited-range Y'CbCr 4:2:0 and the stream is tagged so (smpte170m): FFmpeg's tools decode with that
// matrix whatever the tag, as diffusers' export_to_video encodes, and players that read tags agree.
// H and W must be even (4:2:0 subsampling): an odd size is a usage error. Repeats check_output_writable first.
void write_video(const std::string& path, const at::Tensor& frames, const VideoWriteOptions& options);

}  // namespace omni::io
