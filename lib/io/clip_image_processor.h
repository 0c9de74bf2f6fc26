// transformers' CLIPImageProcessor, the preprocessing diffusers' Wan image pipelines run before the CLIP image
// encoder (image_processor/preprocessor_config.json): RGB, resize so that the shorter side is
// size.shortest_edge (the longer one int(shortest_edge * long / short)) with Pillow's filter `resample`,
// center crop to crop_size (top = (h - crop_h) // 2, left = (w - crop_w) // 2), x * rescale_factor (float64,
// then float32), (x - mean) / std in float32, channels first.
//
// Pixel-exact with the processor's PIL backend (transformers without torchvision, what the reference
// environment has): the resize is Pillow's Image.resize (io/image_resize.h). With torchvision installed,
// transformers 5 picks its torchvision backend instead, whose bicubic resize is a different filter (the
// tensor kernel, antialiased, in float): its pixels differ from these by a few levels of 255 at edges.
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "io/image_resize.h"

namespace omni::io {

struct ClipImageProcessorConfig {
  bool do_convert_rgb = true;
  bool do_resize = true;
  int64_t shortest_edge = 224;
  ResizeFilter resample = ResizeFilter::kBicubic;
  bool do_center_crop = true;
  int64_t crop_height = 224;
  int64_t crop_width = 224;
  bool do_rescale = true;
  double rescale_factor = 1.0 / 255.0;
  bool do_normalize = true;
  // OpenAI CLIP's statistics, CLIPImageProcessor's defaults.
  std::array<double, 3> image_mean{0.48145466, 0.4578275, 0.40821073};
  std::array<double, 3> image_std{0.26862954, 0.26130258, 0.27577711};

  // image_processor/preprocessor_config.json. Settings we do not implement (a size given as height/width
  // instead of shortest_edge, resample NEAREST, do_pad) are input errors naming the file and the key.
  static ClipImageProcessorConfig from_json(const std::string& path);
  static ClipImageProcessorConfig from_json(const nlohmann::json& j, const std::string& source);
};

// `image` [H, W, 3] uint8 (read_image's RGB pixels, what load_image gives) -> pixel_values [1, 3, crop_h,
// crop_w] float32 on the CPU.
at::Tensor clip_preprocess(const at::Tensor& image, const ClipImageProcessorConfig& config);

}  // namespace omni::io
