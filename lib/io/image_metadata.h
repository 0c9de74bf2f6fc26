// Where an image file says how it is oriented, found as Pillow finds it, so that the image we condition on is the
// one diffusers' load_image gives (PIL.Image.open, then ImageOps.exif_transpose, then convert("RGB")).
//
// Pillow's Image.getexif() reads the EXIF block of the file: a JPEG's first APP1 "Exif" segment, a PNG's eXIf
// chunk or its "Raw profile type exif" text (ImageMagick's hex dump), a WebP's EXIF chunk. When that block has no
// Orientation tag (0x0112 in IFD0), it takes the first `tiff:Orientation="N"` or `<tiff:Orientation>N` of the XMP
// packet (a JPEG's APP1 "http://ns.adobe.com/xap/1.0/" segment, a PNG's iTXt "XML:com.adobe.xmp", a WebP's
// "XMP " chunk). exif_transpose then transposes for 2..8 and leaves any other value alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace omni::io {

// The most pixels Pillow opens: twice Image.MAX_IMAGE_PIXELS (89,478,485), above which it raises
// DecompressionBombError, and so load_image refuses the file. Each decoder checks it before it allocates.
constexpr int64_t kMaxImagePixels = 2 * int64_t{89478485};

// The raw blocks, as the file holds them: `exif` with or without its "Exif\0\0" prefix (a TIFF header follows),
// `xmp` the packet's text. Empty when absent.
struct ImageMetadata {
  std::string exif;
  std::string xmp;
};

// True when `data` starts with the PNG signature.
bool is_png(const uint8_t* data, size_t size);

// The blocks of a JPEG (markers before the first scan) and of a PNG (every chunk; nothing when not a PNG).
ImageMetadata jpeg_metadata(const uint8_t* data, size_t size);
ImageMetadata png_metadata(const uint8_t* data, size_t size);

// The Orientation value of an EXIF block's IFD0 (SHORT or LONG, one value), nullopt when the tag is absent or the
// block is not TIFF.
std::optional<int> exif_orientation(const std::string& exif);

// The orientation exif_transpose applies: EXIF's tag, else XMP's, else 1. Values outside 1..8 are returned as
// they are (and leave the image as it is).
int image_orientation(const ImageMetadata& metadata);

}  // namespace omni::io
