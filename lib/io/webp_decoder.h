// WebP (lossy, lossless, with alpha, animated: its first frame) through libwebp's animation decoder, the path
// Pillow's WebPImageFile takes for every WebP file: WebPAnimDecoderNew with the default options (RGBA, no
// threads), the first frame's canvas, its RGB channels (alpha dropped, as convert("RGB") drops it). The file's
// EXIF and XMP chunks come back for the orientation, as Pillow's info["exif"] / info["xmp"].
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "io/image_metadata.h"

namespace omni::io {

// True when `data` starts as Pillow's WebP plugin accepts a file: RIFF, WEBP, then a VP8 / VP8L / VP8X chunk.
bool is_webp(const uint8_t* data, size_t size);

// [H, W, 3] uint8 on the CPU; `metadata` receives the EXIF and XMP chunks. A file libwebp refuses is an input
// error (exit 3) naming `path`.
at::Tensor decode_webp(const uint8_t* data, size_t size, const std::string& path, ImageMetadata* metadata);
// {height, width} of the canvas and the EXIF / XMP chunks, from the container alone (no frame is decoded).
std::pair<int, int> webp_size(const uint8_t* data, size_t size, const std::string& path, ImageMetadata* metadata);

}  // namespace omni::io
