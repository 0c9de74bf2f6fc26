// JPEG through libjpeg-turbo, the library Pillow links, with the settings Pillow's decoder leaves in place (the
// ISLOW integer IDCT, fancy chroma upsampling, block smoothing): the same bytes as PIL.Image.open(path)
// .convert("RGB"), before any EXIF transpose. Gray is replicated. CMYK (4 components, YCCK converted by the
// library) is read the way Pillow reads it whatever the file's markers say, as Adobe-inverted ("CMYK;I"), then
// converted by Pillow's formula: R = clip(255 - k' - c' (255 - k') / 255) with c' = 255 - c, k' = 255 - k, and
// its rounding of the division.
#pragma once

#include <ATen/ATen.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace omni::io {

// [H, W, 3] uint8 on the CPU. A file that libjpeg refuses, that ends before its last scan line (Pillow: "image file
// is truncated"), or that has 2 or more than 4 components is an input error (exit 3) naming `path`.
at::Tensor decode_jpeg(const uint8_t* data, size_t size, const std::string& path);
// {height, width} from the frame header alone (no scan is decoded); an input error naming `path` when libjpeg
// cannot read the header.
std::pair<int, int> jpeg_size(const uint8_t* data, size_t size, const std::string& path);

// Pillow's CMYK -> RGB of one pixel row, on the inverted-read values ("CMYK;I" unpacked): `cmyk` holds 4 bytes per
// pixel as libjpeg gives them, `rgb` receives 3.
void pillow_cmyk_row_to_rgb(const uint8_t* cmyk, uint8_t* rgb, size_t pixels);

}  // namespace omni::io
