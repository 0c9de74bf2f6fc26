#include "io/image_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "io/image_metadata.h"
#include "io/jpeg_decoder.h"
#include "io/webp_decoder.h"

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
  // One read of the size stat gave (a photo is megabytes: byte-wise iteration would cost as much as its decode).
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  OMNI_CHECK_INPUT(!in.bad() && in.gcount() == static_cast<std::streamsize>(bytes.size()), "image '", path,
                   "': read error (", in.gcount(), " of ", bytes.size(), " bytes)");
  OMNI_CHECK_INPUT(!bytes.empty(), "image '", path, "' is empty");
  return bytes;
}

bool is_jpeg(const uint8_t* d, size_t n) {
  return n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF;
}

// A PNG whose IHDR says 16-bit grayscale (colour type 0): Pillow opens it as mode "I;16", whose convert("RGB")
// clips each 16-bit value at 255 (I16_RGB), where every other 16-bit PNG keeps the high byte (stb does the same).
bool is_png_gray16(const uint8_t* d, size_t n) {
  return is_png(d, n) && n >= 26 && std::memcmp(d + 12, "IHDR", 4) == 0 && d[24] == 16 && d[25] == 0;
}

constexpr const char* kFormats = "JPEG, PNG, WebP, BMP, GIF (first frame), TGA, PSD, HDR, PNM";

// Every format but JPEG and WebP, through stb_image.
at::Tensor decode_with_stb(const std::vector<uint8_t>& bytes, const std::string& path) {
  OMNI_CHECK_INPUT(bytes.size() <= static_cast<size_t>(INT32_MAX), "image '", path, "' is larger than 2 GiB");
  const int n = static_cast<int>(bytes.size());
  int w = 0, h = 0, channels_in_file = 0;
  OMNI_CHECK_INPUT(stbi_info_from_memory(bytes.data(), n, &w, &h, &channels_in_file), "image '", path,
                   "' cannot be decoded (", stbi_failure_reason(), "); supported: ", kFormats);
  OMNI_CHECK_INPUT(int64_t{w} * h <= kMaxImagePixels, "image '", path, "' has ", w, " x ", h, " pixels, more than the ",
                   kMaxImagePixels, " Pillow opens");
  at::Tensor image = at::empty({h, w, 3}, at::kByte);  // [H, W, 3]
  uint8_t* out = image.data_ptr<uint8_t>();
  const size_t pixels = static_cast<size_t>(w) * h;
  if (is_png_gray16(bytes.data(), bytes.size())) {
    stbi_us* gray = stbi_load_16_from_memory(bytes.data(), n, &w, &h, &channels_in_file, 1);
    OMNI_CHECK_INPUT(gray != nullptr, "image '", path, "' cannot be decoded (", stbi_failure_reason(), ")");
    for (size_t i = 0; i < pixels; ++i) out[3 * i] = out[3 * i + 1] = out[3 * i + 2] = gray[i] > 255 ? 255 : gray[i];
    stbi_image_free(gray);
    return image;
  }
  stbi_uc* rgb = stbi_load_from_memory(bytes.data(), n, &w, &h, &channels_in_file, 3);
  OMNI_CHECK_INPUT(rgb != nullptr, "image '", path, "' cannot be decoded (", stbi_failure_reason(),
                   "); supported: ", kFormats);
  std::memcpy(out, rgb, pixels * 3);
  stbi_image_free(rgb);
  return image;
}

}  // namespace

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
  const uint8_t* data = bytes.data();
  const size_t size = bytes.size();
  ImageMetadata metadata;
  at::Tensor image;  // [H, W, 3] uint8, as stored
  if (is_jpeg(data, size)) {
    image = decode_jpeg(data, size, path);
    metadata = jpeg_metadata(data, size);
  } else if (is_webp(data, size)) {
    image = decode_webp(data, size, path, &metadata);
  } else {
    image = decode_with_stb(bytes, path);
    metadata = png_metadata(data, size);  // nothing for the other formats
  }
  return apply_exif_orientation(image, image_orientation(metadata));
}

std::pair<int64_t, int64_t> image_size(const std::string& path) {
  const std::vector<uint8_t> bytes = read_bytes(path);
  const uint8_t* data = bytes.data();
  const size_t size = bytes.size();
  ImageMetadata metadata;
  std::pair<int, int> hw;
  if (is_jpeg(data, size)) {
    hw = jpeg_size(data, size, path);
    metadata = jpeg_metadata(data, size);
  } else if (is_webp(data, size)) {
    hw = webp_size(data, size, path, &metadata);
  } else {
    OMNI_CHECK_INPUT(bytes.size() <= static_cast<size_t>(INT32_MAX), "image '", path, "' is larger than 2 GiB");
    int w = 0, h = 0, channels = 0;
    OMNI_CHECK_INPUT(stbi_info_from_memory(data, static_cast<int>(size), &w, &h, &channels), "image '", path,
                     "' cannot be decoded (", stbi_failure_reason(), "); supported: ", kFormats);
    hw = {h, w};
    metadata = png_metadata(data, size);
  }
  OMNI_CHECK_INPUT(int64_t{hw.first} * hw.second <= kMaxImagePixels, "image '", path, "' has ", hw.second, " x ",
                   hw.first, " pixels, more than the ", kMaxImagePixels, " Pillow opens");
  // Orientations 5..8 transpose (exif_transpose), so the image is as wide as the stored one is tall.
  const int orientation = image_orientation(metadata);
  if (orientation >= 5 && orientation <= 8) std::swap(hw.first, hw.second);
  return {hw.first, hw.second};
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
  return conditioning_image(read_image(path), height, width, filter);
}

at::Tensor conditioning_image(const at::Tensor& read, int64_t height, int64_t width, ResizeFilter filter) {
  at::Tensor image = read;  // [h, w, 3]
  if (image.size(0) != height || image.size(1) != width) image = resize_image(image, height, width, filter);
  // VaeImageProcessor: np.float32(x) / 255, then normalize: 2 * x - 1, both in float32
  at::Tensor x = map_levels(image, [](float v) { return 2.0f * v - 1.0f; });  // [H, W, 3]
  return x.permute({2, 0, 1}).unsqueeze(0).contiguous();                      // [1, 3, H, W]
}

at::Tensor animate_character_image(const at::Tensor& image, int64_t height, int64_t width) {
  // WanAnimateImageProcessor._resize_and_fill with fill_color 0: scaled (Python's integer arithmetic) to fit,
  // centred, black around. LANCZOS: the pipeline asks for bilinear, but the processor's __init__ calls
  // VaeImageProcessor.__init__() with no arguments, which registers its default resample ("lanczos") over it
  // (diffusers 0.40); what runs is what counts.
  const int64_t ih = image.size(0), iw = image.size(1);
  const double ratio = static_cast<double>(width) / static_cast<double>(height);
  const double src_ratio = static_cast<double>(iw) / static_cast<double>(ih);
  const int64_t src_w = ratio < src_ratio ? width : iw * height / ih;
  const int64_t src_h = ratio >= src_ratio ? height : ih * width / iw;
  const at::Tensor resized =
      src_h == ih && src_w == iw ? image : resize_image(image, src_h, src_w, ResizeFilter::kLanczos);
  at::Tensor canvas = at::zeros({height, width, 3}, at::kByte);
  canvas.narrow(0, height / 2 - src_h / 2, src_h).narrow(1, width / 2 - src_w / 2, src_w).copy_(resized);
  return conditioning_image(canvas, height, width);  // [1, 3, H, W]
}

namespace {

// torchvision's Resize(size) output for an h x w image: the shorter side to `size`, the longer to
// int(size x long / short) (an int, as torchvision's _compute_resized_output_size). {height, width}.
std::pair<int64_t, int64_t> shorter_side_size(int64_t h, int64_t w, int64_t size) {
  if (h <= w) return {size, size * w / h};
  return {size * h / w, size};
}

// torchvision's center_crop of [..., h, w] to height x width: zero padding first where the image is smaller (left /
// top (d // 2), right / bottom ((d + 1) // 2)), then the offsets int(round((h - height) / 2.0)) (Python's round:
// half to even).
at::Tensor center_crop(const at::Tensor& x, int64_t height, int64_t width) {
  const int64_t h = x.size(-2), w = x.size(-1);
  at::Tensor padded = x;
  if (height > h || width > w) {
    const int64_t dh = std::max<int64_t>(0, height - h), dw = std::max<int64_t>(0, width - w);
    padded = at::constant_pad_nd(x, {dw / 2, (dw + 1) / 2, dh / 2, (dh + 1) / 2}, 0.0);
  }
  const int64_t ph = padded.size(-2), pw = padded.size(-1);
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(ph - height) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(pw - width) / 2.0));
  return padded.narrow(-2, top, height).narrow(-1, left, width);
}

}  // namespace

at::Tensor s2v_reference_image(const at::Tensor& image, int64_t height, int64_t width) {
  OMNI_CHECK(image.dim() == 3 && image.size(2) == 3 && image.scalar_type() == at::kByte,
             "s2v_reference_image: expected [h, w, 3] uint8, got ", image.sizes());
  const auto [rh, rw] = shorter_side_size(image.size(0), image.size(1), std::min(height, width));
  const at::Tensor resized = resize_image(image, rh, rw, ResizeFilter::kBilinear);    // Pillow: a copy when equal
  const at::Tensor cropped = center_crop(resized.permute({2, 0, 1}), height, width);  // [3, H, W] uint8
  return (cropped.to(at::kFloat).div(255.0f) * 2.0f - 1.0f).unsqueeze(0).contiguous();
}

at::Tensor s2v_pose_frames(const at::Tensor& frames, int64_t height, int64_t width) {
  OMNI_CHECK(frames.dim() == 4 && frames.size(3) == 3 && frames.scalar_type() == at::kByte,
             "s2v_pose_frames: expected [N, h, w, 3] uint8, got ", frames.sizes());
  at::Tensor x = frames.permute({0, 3, 1, 2}).to(at::kFloat) / 255.0f * 2.0f - 1.0f;  // [N, 3, h, w]
  const auto [rh, rw] = shorter_side_size(x.size(2), x.size(3), std::min(height, width));
  // torchvision returns the tensor itself when the size does not change.
  if (rh != x.size(2) || rw != x.size(3)) x = at::_upsample_bilinear2d_aa(x.contiguous(), {rh, rw}, false);
  return center_crop(x, height, width).permute({1, 0, 2, 3}).unsqueeze(0).contiguous();  // [1, 3, N, H, W]
}

at::Tensor luma_levels(const at::Tensor& rgb) {
  OMNI_CHECK(rgb.scalar_type() == at::kByte && rgb.size(-1) == 3, "expected uint8 RGB, got ", rgb.sizes());
  // Pillow's convert("L"): (R 19595 + G 38470 + B 7471 + 2^15) >> 16, in integers.
  const at::Tensor x = rgb.to(at::kInt);
  const at::Tensor sum = x.select(-1, 0) * 19595 + x.select(-1, 1) * 38470 + x.select(-1, 2) * 7471 + 0x8000;
  return at::bitwise_right_shift(sum, 16).to(at::kByte);
}

at::Tensor vace_reference_image(const at::Tensor& image, int64_t height, int64_t width, int64_t multiple,
                                const std::string& path) {
  const int64_t h = image.size(0) - image.size(0) % multiple, w = image.size(1) - image.size(1) % multiple;
  OMNI_CHECK_INPUT(h > 0 && w > 0, path, ": a reference image of ", image.size(1), "x", image.size(0),
                   " pixels is smaller than the VAE's ", multiple, "-pixel cell");
  const at::Tensor x = conditioning_image(image, h, w);  // [1, 3, h, w] in [-1, 1]
  // Python's min(H / h, W / w) and int(h * scale): doubles, truncated.
  const double scale = std::min(static_cast<double>(height) / static_cast<double>(h),
                                static_cast<double>(width) / static_cast<double>(w));
  const auto nh = static_cast<int64_t>(static_cast<double>(h) * scale);
  const auto nw = static_cast<int64_t>(static_cast<double>(w) * scale);
  const at::Tensor resized = at::upsample_bilinear2d(x, {nh, nw}, /*align_corners=*/false);  // [1, 3, nh, nw]
  at::Tensor canvas = at::ones({3, height, width}, x.options());
  canvas.narrow(1, (height - nh) / 2, nh).narrow(2, (width - nw) / 2, nw).copy_(resized[0]);
  return canvas;  // [3, height, width]
}

}  // namespace omni::io
