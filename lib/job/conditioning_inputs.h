// The conditioning inputs of each video read into its request: the first and the last image (I2V, first-last
// frame, TI2V's image mode), the video-to-video clip, VACE's control video, mask and reference images, and
// Wan2.2-Animate's character image and its videos (read a segment at a time, as the pipeline asks), each
// resized to the video's size as diffusers'
// processors resize them (io/image_reader.h, io/video_reader.h). A file consecutive videos share (one --image
// over a whole list) is read and resized once.
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "config/options.h"
#include "pipeline/wan_pipeline.h"

namespace omni::job {

class ConditioningInputs {
 public:
  // `temporal_factor`: the VAE's, which rounds a video's frame count (VideoParams::rounded_num_frames).
  // `vae_factor`: the VAE's spatial factor (VACE's reference images are floored to it first).
  // `face_size`: Wan2.2-Animate's face crops' side (the motion encoder's size; 0 for other models).
  ConditioningInputs(int temporal_factor, int vae_factor, int64_t face_size = 0)
      : temporal_factor_(temporal_factor), vae_factor_(vae_factor), face_size_(face_size) {}

  // Sets req.image, req.last_image (with their pixels as read), req.clip and VACE's control video, mask,
  // reference images and conditioning scale from the video's options `o` (req.video already set).
  void fill(const config::GenerateOptions& o, pipeline::GenerationRequest& req);

 private:
  // Wan2.2-Animate's: the character image and the source of each segment's frames.
  void fill_animate(const config::GenerateOptions& o, pipeline::GenerationRequest& req);
  // Wan2.2-S2V's: the reference image, the recording's span at 16 kHz and the source of each clip's pose frames.
  void fill_speech(const config::GenerateOptions& o, pipeline::GenerationRequest& req);

  // The tensor of the file and size loaded last.
  struct Cached {
    std::string key;  // path@size
    at::Tensor tensor;
  };
  int temporal_factor_;
  int vae_factor_ = 8;
  int64_t face_size_ = 0;
  Cached first_, last_, clip_, control_, mask_;
  std::vector<Cached> references_;
  Cached first_read_, last_read_;  // the images as read (key: the path)
};

}  // namespace omni::job
