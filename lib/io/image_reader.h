// Image input through stb_image: PNG, JPEG (baseline and progressive), BMP, TGA, GIF (first frame), PSD, HDR,
// PNM. Images are read the way diffusers' load_image does: the EXIF orientation of a JPEG is applied
// (ImageOps.exif_transpose), then the image is made RGB (gray replicated, alpha dropped, palettes expanded).
//
// Decoders differ: PNG, BMP, TGA, ... decode to the same bytes as Pillow; a JPEG can differ from libjpeg's
// decode by a level or two here and there (IDCT and chroma upsampling are not specified to the bit).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "io/image_resize.h"

namespace omni::io {

// [H, W, 3] uint8 RGB on the CPU. A missing, unreadable, corrupt or unsupported file is an input error (exit 3)
// naming the file and, for decoding failures, stb's reason.
at::Tensor read_image(const std::string& path);

// [H, W, 3] uint8 -> float32 in [0, 1] (x / 255).
at::Tensor image_to_float(const at::Tensor& image);

// The conditioning image of an image-to-video run as diffusers' VideoProcessor.preprocess(image, height, width)
// gives it for a PIL image: resized to (height, width) with `filter` when its size differs (LANCZOS, the
// processor's default), x / 255, 2x - 1, as [1, 3, height, width] float32 in [-1, 1] on the CPU.
at::Tensor load_conditioning_image(const std::string& path, int64_t height, int64_t width,
                                   ResizeFilter filter = ResizeFilter::kLanczos);

// The EXIF orientation (1..8) of a JPEG held in `data`, 1 when there is none or it cannot be read.
int jpeg_exif_orientation(const uint8_t* data, size_t size);

// Applies an EXIF orientation (1..8) to [H, W, C], as Pillow's ImageOps.exif_transpose.
at::Tensor apply_exif_orientation(const at::Tensor& image, int orientation);

}  // namespace omni::io
