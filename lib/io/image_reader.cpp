#include "io/image_reader.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "core/error.h"

// The one translation unit that holds stb_image's implementation; only the decoder is needed.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-but-set-variable"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace omni::io {
namespace {

std::vector<uint8_t> read_bytes(const std::string& path) {
  struct stat st;
  OMNI_CHECK_INPUT(::stat(path.c_str(), &st) == 0, "image '", path, "' cannot be read: ", std::strerror(errno));
  OMNI_CHECK_INPUT(!S_ISDIR(st.st_mode), "image '", path, "' is a folder, not an image file");
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_INPUT(in.good(), "image '", path, "' cannot be opened: ", std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  OMNI_CHECK_INPUT(!in.bad(), "image '", path, "': read error");
  OMNI_CHECK_INPUT(!bytes.empty(), "image '", path, "' is empty");
  return bytes;
}

uint32_t read_u16(const uint8_t* p, bool little) {
  return little ? (p[0] | (p[1] << 8)) : ((p[0] << 8) | p[1]);
}

uint32_t read_u32(const uint8_t* p, bool little) {
  return little ? (uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24))
                : ((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

// Orientation tag 0x0112 in IFD0 of a TIFF block (the body of an "Exif\0\0" APP1 segment).
int tiff_orientation(const uint8_t* t, size_t n) {
  if (n < 8) return 1;
  bool little;
  if (t[0] == 'I' && t[1] == 'I') {
    little = true;
  } else if (t[0] == 'M' && t[1] == 'M') {
    little = false;
  } else {
    return 1;
  }
  if (read_u16(t + 2, little) != 42) return 1;
  const uint32_t ifd = read_u32(t + 4, little);
  if (ifd > n || n - ifd < 2) return 1;
  const uint32_t entries = read_u16(t + ifd, little);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + static_cast<size_t>(i) * 12;
    if (e + 12 > n) return 1;
    if (read_u16(t + e, little) != 0x0112) continue;
    if (read_u16(t + e + 2, little) != 3) return 1;  // must be SHORT; the value sits in the first 2 bytes
    const uint32_t v = read_u16(t + e + 8, little);
    return (v >= 1 && v <= 8) ? static_cast<int>(v) : 1;
  }
  return 1;
}

}  // namespace

int jpeg_exif_orientation(const uint8_t* data, size_t size) {
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return 1;  // not a JPEG
  size_t pos = 2;
  while (pos + 4 <= size) {
    if (data[pos] != 0xFF) return 1;
    const uint8_t marker = data[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return 1;  // end of image / start of scan: no EXIF before the data
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // markers without a length
      pos += 2;
      continue;
    }
    const size_t len = (size_t{data[pos + 2]} << 8) | data[pos + 3];  // includes the 2 length bytes
    if (len < 2 || pos + 2 + len > size) return 1;
    const uint8_t* body = data + pos + 4;
    const size_t body_len = len - 2;
    if (marker == 0xE1 && body_len >= 6 && std::memcmp(body, "Exif\0\0", 6) == 0)
      return tiff_orientation(body + 6, body_len - 6);
    pos += 2 + len;
  }
  return 1;
}

at::Tensor apply_exif_orientation(const at::Tensor& image, int orientation) {
  // Pillow's transposes, on [H, W, C]: rows are y (top to bottom), columns x (left to right).
  switch (orientation) {
    case 2:
      return image.flip({1}).contiguous();  // FLIP_LEFT_RIGHT
    case 3:
      return image.flip({0, 1}).contiguous();  // ROTATE_180
    case 4:
      return image.flip({0}).contiguous();  // FLIP_TOP_BOTTOM
    case 5:
      return image.permute({1, 0, 2}).contiguous();  // TRANSPOSE (main diagonal)  [W, H, C]
    case 6:
      return image.permute({1, 0, 2}).flip({1}).contiguous();  // ROTATE_270: 90 degrees clockwise  [W, H, C]
    case 7:
      return image.permute({1, 0, 2}).flip({0, 1}).contiguous();  // TRANSVERSE (anti-diagonal)  [W, H, C]
    case 8:
      return image.permute({1, 0, 2}).flip({0}).contiguous();  // ROTATE_90: counter-clockwise  [W, H, C]
    default:
      return image;
  }
}

at::Tensor read_image(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  OMNI_CHECK_INPUT(bytes.size() <= static_cast<size_t>(INT32_MAX), "image '", path, "' is larger than 2 GiB");
  int w = 0, h = 0, channels_in_file = 0;
  stbi_uc* pixels = stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels_in_file, 3);
  OMNI_CHECK_INPUT(pixels != nullptr, "image '", path, "' cannot be decoded (", stbi_failure_reason(),
                   "); supported: PNG, JPEG, BMP, TGA, GIF, PSD, HDR, PNM");
  at::Tensor image = at::empty({h, w, 3}, at::kByte);  // [H, W, 3]
  std::memcpy(image.data_ptr<uint8_t>(), pixels, static_cast<size_t>(w) * h * 3);
  stbi_image_free(pixels);
  return apply_exif_orientation(image, jpeg_exif_orientation(bytes.data(), bytes.size()));
}

namespace {

// Each of the 256 levels mapped through `fn` (float32 arithmetic), so that the result is the correctly rounded
// float32 value NumPy computes, whatever vectorization ATen would apply to a division.
template <typename Fn>
at::Tensor map_levels(const at::Tensor& image, Fn fn) {
  OMNI_CHECK(image.scalar_type() == at::kByte, "expected a uint8 image, got ", at::toString(image.scalar_type()));
  float table[256];
  for (int i = 0; i < 256; ++i) table[i] = fn(static_cast<float>(i) / 255.0f);
  at::Tensor src = image.to(at::kCPU).contiguous();
  at::Tensor out = at::empty(src.sizes(), at::kFloat);
  const uint8_t* in = src.data_ptr<uint8_t>();
  float* o = out.data_ptr<float>();
  for (int64_t i = 0, n = src.numel(); i < n; ++i) o[i] = table[in[i]];
  return out;
}

}  // namespace

at::Tensor image_to_float(const at::Tensor& image) {
  return map_levels(image, [](float x) { return x; });
}

at::Tensor load_conditioning_image(const std::string& path, int64_t height, int64_t width, ResizeFilter filter) {
  at::Tensor image = read_image(path);  // [h, w, 3]
  if (image.size(0) != height || image.size(1) != width) image = resize_image(image, height, width, filter);
  // VaeImageProcessor: np.float32(x) / 255, then normalize: 2 * x - 1, both in float32
  at::Tensor x = map_levels(image, [](float v) { return 2.0f * v - 1.0f; });  // [H, W, 3]
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();                      // [1, 3, H, W]
}

}  // namespace omni::io
