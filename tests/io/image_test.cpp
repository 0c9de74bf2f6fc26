// Image input: files written by stb_image_write read back (PNG / BMP / TGA exact, JPEG close), EXIF orientation,
// errors; the resize against Pillow's own expected pixels (its Tests/test_image_resample.py) and a hand-computed
// case; derive_size; the conditioning image against the i2v fixture's VAE input.
#include <gtest/gtest.h>

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#include <webp/encode.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "io/image_metadata.h"
#include "io/image_reader.h"
#include "io/jpeg_decoder.h"
#include "io/safetensors.h"
#include "media_test_util.h"

namespace omni::media_test {
namespace {

using io::ResizeFilter;

at::Tensor random_image(int64_t h, int64_t w, int64_t c, uint64_t seed) {
  at::Tensor t = at::empty({h, w, c}, at::kByte);
  uint64_t s = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  uint8_t* p = t.data_ptr<uint8_t>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    p[i] = static_cast<uint8_t>(s >> 56);
  }
  return t;
}

int64_t max_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kInt) - b.to(at::kInt)).abs().max().item<int64_t>();
}

TEST(ImageReader, LosslessFormatsAreExact) {
  TempDir dir;
  at::Tensor rgb = random_image(5, 7, 3, 1);  // [5, 7, 3]
  const uint8_t* px = rgb.data_ptr<uint8_t>();
  ASSERT_TRUE(stbi_write_png((dir / "a.png").c_str(), 7, 5, 3, px, 7 * 3));
  ASSERT_TRUE(stbi_write_bmp((dir / "a.bmp").c_str(), 7, 5, 3, px));
  ASSERT_TRUE(stbi_write_tga((dir / "a.tga").c_str(), 7, 5, 3, px));
  for (const char* name : {"a.png", "a.bmp", "a.tga"}) {
    at::Tensor back = io::read_image(dir / name);
    ASSERT_EQ(back.sizes(), rgb.sizes()) << name;
    EXPECT_EQ(back.scalar_type(), at::kByte);
    EXPECT_EQ(max_diff(back, rgb), 0) << name;
  }
  // RGBA: alpha dropped; gray and gray+alpha: gray replicated (Pillow's convert("RGB")).
  at::Tensor rgba = random_image(4, 6, 4, 2);
  ASSERT_TRUE(stbi_write_png((dir / "rgba.png").c_str(), 6, 4, 4, rgba.data_ptr<uint8_t>(), 6 * 4));
  EXPECT_EQ(max_diff(io::read_image(dir / "rgba.png"), rgba.slice(2, 0, 3)), 0);
  at::Tensor ga = random_image(4, 6, 2, 3);
  ASSERT_TRUE(stbi_write_png((dir / "ga.png").c_str(), 6, 4, 2, ga.data_ptr<uint8_t>(), 6 * 2));
  EXPECT_EQ(max_diff(io::read_image(dir / "ga.png"), ga.slice(2, 0, 1).expand({4, 6, 3})), 0);

  at::Tensor f = io::image_to_float(rgb);
  EXPECT_EQ(f.scalar_type(), at::kFloat);
  EXPECT_FLOAT_EQ(f[0][0][0].item<float>(), px[0] / 255.0f);
}

TEST(ImageReader, JpegIsClose) {
  TempDir dir;
  // A smooth image: JPEG's loss is then a level or two.
  at::Tensor img = (gradient_clip(1, 24, 40)[0] * 255).round().to(at::kByte).contiguous();  // [24, 40, 3]
  ASSERT_TRUE(stbi_write_jpg((dir / "a.jpg").c_str(), 40, 24, 3, img.data_ptr<uint8_t>(), 95));
  at::Tensor back = io::read_image(dir / "a.jpg");
  ASSERT_EQ(back.sizes(), img.sizes());
  const double mean = (back.to(at::kFloat) - img.to(at::kFloat)).abs().mean().item<double>();
  std::printf("jpeg q95 read back: max abs %ld levels, mean abs %.3f levels\n", (long)max_diff(back, img), mean);
  EXPECT_LE(max_diff(back, img), 16);
  EXPECT_LE(mean, 2.0);
  // The ffmpeg program decodes the same file to nearly the same pixels (another JPEG decoder).
  std::string raw;
  ASSERT_EQ(run_command("ffmpeg -v error -i '" + (dir / "a.jpg") + "' -f rawvideo -pix_fmt rgb24 -", &raw, false), 0);
  ASSERT_EQ(raw.size(), 24u * 40 * 3);
  at::Tensor theirs = at::from_blob(raw.data(), {24, 40, 3}, at::kByte).clone();
  std::printf("stb vs ffmpeg jpeg decode: max abs %ld levels\n", (long)max_diff(back, theirs));
  EXPECT_LE(max_diff(back, theirs), 8);
}

// A JPEG whose APP1 segment says `orientation` (little- or big-endian TIFF), inserted right after SOI.
std::string with_exif(const std::string& jpeg, int orientation, bool little) {
  auto u16 = [&](uint16_t v) {
    return little ? std::string{char(v & 0xFF), char(v >> 8)} : std::string{char(v >> 8), char(v & 0xFF)};
  };
  auto u32 = [&](uint32_t v) {
    std::string s(4, '\0');
    for (int i = 0; i < 4; ++i) s[little ? i : 3 - i] = char((v >> (8 * i)) & 0xFF);
    return s;
  };
  std::string tiff = std::string(little ? "II" : "MM") + u16(42) + u32(8) + u16(2);
  tiff += u16(0x010F) + u16(2) + u32(4) + std::string("omn", 4);  // Make = "omn" (a different tag first)
  tiff += u16(0x0112) + u16(3) + u32(1) + u16(static_cast<uint16_t>(orientation)) + u16(0);
  tiff += u32(0);
  std::string body = std::string("Exif\0\0", 6) + tiff;
  const size_t len = body.size() + 2;
  std::string app1 = std::string{char(0xFF), char(0xE1), char(len >> 8), char(len & 0xFF)} + body;
  return jpeg.substr(0, 2) + app1 + jpeg.substr(2);
}

TEST(ImageReader, ExifOrientationIsApplied) {
  TempDir dir;
  // 8 rows x 16 columns: left half red, right half blue (flat blocks survive JPEG well).
  at::Tensor img = at::zeros({8, 16, 3}, at::kByte);
  img.slice(1, 0, 8).select(2, 0).fill_(230);
  img.slice(1, 8, 16).select(2, 2).fill_(230);
  ASSERT_TRUE(stbi_write_jpg((dir / "plain.jpg").c_str(), 16, 8, 3, img.data_ptr<uint8_t>(), 100));
  const std::string plain = read_file(dir / "plain.jpg");
  EXPECT_EQ(io::image_orientation(io::jpeg_metadata(reinterpret_cast<const uint8_t*>(plain.data()), plain.size())), 1);
  at::Tensor base = io::read_image(dir / "plain.jpg");
  ASSERT_EQ(base.sizes(), (at::IntArrayRef{8, 16, 3}));

  auto red_at = [](const at::Tensor& t, int64_t y, int64_t x) {
    return t[y][x][0].item<int>() > 150 && t[y][x][2].item<int>() < 80;
  };
  for (bool little : {true, false}) {
    for (int o = 1; o <= 8; ++o) {
      const std::string bytes = with_exif(plain, o, little);
      EXPECT_EQ(io::image_orientation(io::jpeg_metadata(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())),
                o);
      write_file(dir / "o.jpg", bytes);
      at::Tensor t = io::read_image(dir / "o.jpg");
      // Exactly Pillow's transposes of the un-rotated decode.
      EXPECT_EQ(max_diff(t, io::apply_exif_orientation(base, o)), 0) << "orientation " << o;
      if (o == 6) {  // rotate 90 degrees clockwise: the left (red) half goes to the top
        ASSERT_EQ(t.sizes(), (at::IntArrayRef{16, 8, 3}));
        EXPECT_TRUE(red_at(t, 2, 4));
        EXPECT_FALSE(red_at(t, 13, 4));
      }
      if (o == 8) {  // counter-clockwise: the left half goes to the bottom
        ASSERT_EQ(t.sizes(), (at::IntArrayRef{16, 8, 3}));
        EXPECT_FALSE(red_at(t, 2, 4));
        EXPECT_TRUE(red_at(t, 13, 4));
      }
      if (o == 3) {  // 180: red on the right
        ASSERT_EQ(t.sizes(), (at::IntArrayRef{8, 16, 3}));
        EXPECT_TRUE(red_at(t, 4, 13));
        EXPECT_FALSE(red_at(t, 4, 2));
      }
    }
  }
  // Orientation transposes on a tiny labelled matrix [[1, 2], [3, 4]] (Pillow's definitions).
  at::Tensor m = at::tensor({1, 2, 3, 4}, at::kByte).view({2, 2, 1});
  auto flat = [&](int o) {
    at::Tensor r = io::apply_exif_orientation(m, o).reshape({4});
    return std::vector<int>{r[0].item<int>(), r[1].item<int>(), r[2].item<int>(), r[3].item<int>()};
  };
  EXPECT_EQ(flat(2), (std::vector<int>{2, 1, 4, 3}));  // mirror left-right
  EXPECT_EQ(flat(3), (std::vector<int>{4, 3, 2, 1}));  // 180
  EXPECT_EQ(flat(4), (std::vector<int>{3, 4, 1, 2}));  // mirror top-bottom
  EXPECT_EQ(flat(5), (std::vector<int>{1, 3, 2, 4}));  // transpose
  EXPECT_EQ(flat(6), (std::vector<int>{3, 1, 4, 2}));  // 90 clockwise
  EXPECT_EQ(flat(7), (std::vector<int>{4, 2, 3, 1}));  // transverse
  EXPECT_EQ(flat(8), (std::vector<int>{2, 4, 1, 3}));  // 90 counter-clockwise
}

TEST(ImageReader, BadFilesAreInputErrorsNamingTheFile) {
  TempDir dir;
  expect_error([&] { io::read_image(dir / "missing.png"); }, ExitCode::kInput, {dir / "missing.png"});
  write_file(dir / "garbage.png", "definitely not a PNG file, just some text");
  expect_error([&] { io::read_image(dir / "garbage.png"); }, ExitCode::kInput, {dir / "garbage.png", "decoded"});
  write_file(dir / "empty.jpg", "");
  expect_error([&] { io::read_image(dir / "empty.jpg"); }, ExitCode::kInput, {dir / "empty.jpg", "empty"});
  expect_error([&] { io::read_image(dir.path()); }, ExitCode::kInput, {dir.path(), "folder"});
  // A truncated PNG.
  at::Tensor rgb = random_image(16, 16, 3, 4);
  ASSERT_TRUE(stbi_write_png((dir / "ok.png").c_str(), 16, 16, 3, rgb.data_ptr<uint8_t>(), 16 * 3));
  const std::string bytes = read_file(dir / "ok.png");
  write_file(dir / "cut.png", bytes.substr(0, bytes.size() / 2));
  expect_error([&] { io::read_image(dir / "cut.png"); }, ExitCode::kInput, {dir / "cut.png"});
  expect_error([&] { io::load_conditioning_image(dir / "missing.png", 16, 16); }, ExitCode::kInput,
               {dir / "missing.png"});
}

// JPEG and WebP faults: truncated data (Pillow: "image file is truncated"), a frame header claiming more pixels
// than Pillow opens, a corrupt WebP; each an input error naming the file; a TIFF (Pillow reads it, we do not)
// names the formats accepted.
TEST(ImageReader, JpegAndWebpFaultsAreInputErrors) {
  TempDir dir;
  at::Tensor rgb = random_image(48, 64, 3, 9);
  ASSERT_TRUE(stbi_write_jpg((dir / "ok.jpg").c_str(), 64, 48, 3, rgb.data_ptr<uint8_t>(), 90));
  const std::string jpeg = read_file(dir / "ok.jpg");
  EXPECT_EQ(io::read_image(dir / "ok.jpg").sizes(), (at::IntArrayRef{48, 64, 3}));
  write_file(dir / "cut.jpg", jpeg.substr(0, jpeg.size() * 2 / 3));
  expect_error([&] { io::read_image(dir / "cut.jpg"); }, ExitCode::kInput, {dir / "cut.jpg", "truncated"});
  // The same scans under a frame header of 49152 x 49152 (2.4 G pixels).
  std::string bomb = jpeg;
  const size_t sof = bomb.find("\xFF\xC0");
  ASSERT_NE(sof, std::string::npos);
  bomb.replace(sof + 5, 4, std::string("\xC0\x00\xC0\x00", 4));
  write_file(dir / "bomb.jpg", bomb);
  expect_error([&] { io::read_image(dir / "bomb.jpg"); }, ExitCode::kInput, {dir / "bomb.jpg", "49152 x 49152"});
  write_file(dir / "header_only.jpg", jpeg.substr(0, 20));
  expect_error([&] { io::read_image(dir / "header_only.jpg"); }, ExitCode::kInput, {dir / "header_only.jpg"});

  uint8_t* webp = nullptr;
  const size_t webp_size = WebPEncodeRGB(rgb.data_ptr<uint8_t>(), 64, 48, 64 * 3, 80.0f, &webp);
  ASSERT_GT(webp_size, 0u);
  const std::string webp_bytes(reinterpret_cast<const char*>(webp), webp_size);
  WebPFree(webp);
  write_file(dir / "ok.webp", webp_bytes);
  at::Tensor back = io::read_image(dir / "ok.webp");
  ASSERT_EQ(back.sizes(), (at::IntArrayRef{48, 64, 3}));
  write_file(dir / "cut.webp", webp_bytes.substr(0, webp_bytes.size() / 2));
  expect_error([&] { io::read_image(dir / "cut.webp"); }, ExitCode::kInput, {dir / "cut.webp", "WebP"});
  // Its bitstream zeroed after the chunk header: libwebp (and so Pillow) refuses it. (Flipped bits inside the
  // VP8 data are not an error for either: the decoder draws what they say.)
  write_file(dir / "zeroed.webp", webp_bytes.substr(0, 20) + std::string(webp_bytes.size() - 20, '\0'));
  expect_error([&] { io::read_image(dir / "zeroed.webp"); }, ExitCode::kInput, {dir / "zeroed.webp", "WebP"});

  write_file(dir / "a.tif", std::string("II*\0\x08\0\0\0\0\0", 10));
  expect_error([&] { io::read_image(dir / "a.tif"); }, ExitCode::kInput, {dir / "a.tif", "JPEG, PNG, WebP"});
}

// Pillow's CMYK -> RGB after its inverted read, against the formula in exact rationals: R = clip(k - round((255 -
// c) * k / 255)), over every (c, k) pair (MULDIV255 is exact rounding for 8-bit products: a * b / 255 never ends
// in exactly one half).
TEST(ImageReader, CmykConversionIsPillows) {
  for (int k = 0; k < 256; ++k) {
    for (int c = 0; c < 256; ++c) {
      const uint8_t cmyk[4] = {static_cast<uint8_t>(c), static_cast<uint8_t>(255 - c), static_cast<uint8_t>(c / 2),
                               static_cast<uint8_t>(k)};
      uint8_t rgb[3];
      io::pillow_cmyk_row_to_rgb(cmyk, rgb, 1);
      for (int ch = 0; ch < 3; ++ch) {
        const int num = (255 - cmyk[ch]) * k;
        const int rounded = (2 * num + 255) / 510;  // round(num / 255), halves impossible
        const int want = std::clamp(k - rounded, 0, 255);
        ASSERT_EQ(rgb[ch], want) << "c " << int{cmyk[ch]} << " k " << k;
      }
    }
  }
}

// Where the orientation comes from: EXIF (SHORT or LONG; "Exif\0\0" prefixes stripped), XMP only when EXIF has no
// Orientation tag, nothing else.
TEST(ImageReader, OrientationSources) {
  auto ifd = [](uint16_t type, uint32_t value, bool little) {
    auto u16 = [&](uint32_t v) {
      return little ? std::string{char(v & 0xFF), char(v >> 8)} : std::string{char(v >> 8), char(v & 0xFF)};
    };
    auto u32 = [&](uint32_t v) { return little ? u16(v & 0xFFFF) + u16(v >> 16) : u16(v >> 16) + u16(v & 0xFFFF); };
    std::string t = little ? "II" : "MM";
    t += u16(42) + u32(8) + u16(1) + u16(0x0112) + u16(type) + u32(1);
    t += type == 3 ? u16(value) + u16(0) : u32(value);
    return t + u32(0);
  };
  EXPECT_EQ(io::exif_orientation(ifd(3, 6, true)), 6);
  EXPECT_EQ(io::exif_orientation(ifd(4, 8, false)), 8);
  EXPECT_EQ(io::exif_orientation(std::string("Exif\0\0Exif\0\0", 12) + ifd(3, 3, false)), 3);
  EXPECT_EQ(io::exif_orientation("not tiff"), std::nullopt);
  const std::string xmp = "<x:xmpmeta><rdf:Description tiff:Orientation=\"5\"/></x:xmpmeta>";
  EXPECT_EQ(io::image_orientation({ifd(3, 2, true), xmp}), 2);
  EXPECT_EQ(io::image_orientation({"", xmp}), 5);
  EXPECT_EQ(io::image_orientation({"", "<tiff:Orientation>7</tiff:Orientation>"}), 7);
  EXPECT_EQ(io::image_orientation({"", "<exif:Orientation>7</exif:Orientation>"}), 1);
  EXPECT_EQ(io::image_orientation({}), 1);
}

// Pillow's Tests/test_image_resample.py (TestImagingCoreResampleAccuracy): a w x h image with the top-left and
// bottom-right quadrants `color` and the others 255 - color; the expected result is given by its top-left
// quadrant, the rest follows by symmetry.
at::Tensor pillow_case(int64_t w, int64_t h, int color, int64_t channels) {
  at::Tensor t = at::full({h, w, channels}, 255 - color, at::kByte);
  t.slice(0, 0, h / 2).slice(1, 0, w / 2).fill_(color);
  t.slice(0, h / 2, h).slice(1, w / 2, w).fill_(color);
  return t;
}

at::Tensor pillow_sample(const std::vector<int>& quarter, int64_t w, int64_t h) {
  at::Tensor s = at::zeros({h, w}, at::kByte);
  auto a = s.accessor<uint8_t, 2>();
  const int64_t qw = w / 2, qh = h / 2;
  for (int64_t y = 0; y < qh; ++y)
    for (int64_t x = 0; x < qw; ++x) {
      const int v = quarter[y * qw + x];
      a[y][x] = v;
      a[h - y - 1][w - x - 1] = v;
      a[h - y - 1][x] = 255 - v;
      a[y][w - x - 1] = 255 - v;
    }
  return s;
}

TEST(ImageResize, MatchesPillowAccuracyCases) {
  struct Case {
    const char* name;
    ResizeFilter filter;
    int64_t in, out;
    std::vector<int> quarter;
  };
  const std::vector<Case> cases = {
      {"reduce box", ResizeFilter::kBox, 8, 4, {0xe1, 0xe1, 0xe1, 0xe1}},
      {"reduce bilinear", ResizeFilter::kBilinear, 8, 4, {0xe1, 0xc9, 0xc9, 0xb7}},
      {"reduce hamming", ResizeFilter::kHamming, 8, 4, {0xe1, 0xda, 0xda, 0xd3}},
      {"reduce bicubic", ResizeFilter::kBicubic, 12, 6, {0xe1, 0xe3, 0xd4, 0xe3, 0xe5, 0xd6, 0xd4, 0xd6, 0xc9}},
      {"reduce lanczos",
       ResizeFilter::kLanczos,
       16,
       8,
       {0xe1, 0xe0, 0xe4, 0xd7, 0xe0, 0xdf, 0xe3, 0xd6, 0xe4, 0xe3, 0xe7, 0xda, 0xd7, 0xd6, 0xd9, 0xce}},
      {"enlarge box", ResizeFilter::kBox, 2, 4, {0xe1, 0xe1, 0xe1, 0xe1}},
      {"enlarge bilinear", ResizeFilter::kBilinear, 2, 4, {0xe1, 0xb0, 0xb0, 0x98}},
      {"enlarge hamming", ResizeFilter::kHamming, 2, 4, {0xe1, 0xd2, 0xd2, 0xc5}},
      {"enlarge bicubic",
       ResizeFilter::kBicubic,
       4,
       8,
       {0xe1, 0xe5, 0xee, 0xb9, 0xe5, 0xe9, 0xf3, 0xbc, 0xee, 0xf3, 0xfd, 0xc1, 0xb9, 0xbc, 0xc1, 0xa2}},
      {"enlarge lanczos", ResizeFilter::kLanczos, 6, 12, {0xe1, 0xe0, 0xdb, 0xed, 0xf5, 0xb8, 0xe0, 0xdf, 0xda,
                                                          0xec, 0xf3, 0xb7, 0xdb, 0xdb, 0xd6, 0xe7, 0xee, 0xb5,
                                                          0xed, 0xec, 0xe6, 0xfb, 0xff, 0xbf, 0xf5, 0xf4, 0xee,
                                                          0xff, 0xff, 0xc4, 0xb8, 0xb7, 0xb4, 0xbf, 0xc4, 0xa0}},
  };
  for (const auto& c : cases) {
    at::Tensor expected = pillow_sample(c.quarter, c.out, c.out);
    for (int64_t channels : {1, 3}) {
      at::Tensor got = io::resize_image(pillow_case(c.in, c.in, 0xe1, channels), c.out, c.out, c.filter);
      ASSERT_EQ(got.sizes(), (at::IntArrayRef{c.out, c.out, channels})) << c.name;
      for (int64_t ch = 0; ch < channels; ++ch) {
        const int64_t err = max_diff(got.select(2, ch), expected);
        EXPECT_EQ(err, 0) << c.name << " channel " << ch << "\ngot:\n"
                          << got.select(2, ch) << "\nexpected:\n"
                          << expected;
      }
    }
  }
}

TEST(ImageResize, MatchesPillowConsistencyCases) {
  // TestCoreResampleConsistency: 512x9 -> 9x512 LANCZOS keeps a flat color exactly.
  at::Tensor flat = at::empty({9, 512, 3}, at::kByte);
  flat.select(2, 0).fill_(0);
  flat.select(2, 1).fill_(64);
  flat.select(2, 2).fill_(255);
  at::Tensor r = io::resize_image(flat, 512, 9, ResizeFilter::kLanczos);
  ASSERT_EQ(r.sizes(), (at::IntArrayRef{512, 9, 3}));
  EXPECT_EQ(max_diff(r, flat.slice(0, 0, 1).slice(1, 0, 1).expand({512, 9, 3})), 0);
  // TestCoreResampleCoefficients.test_nonzero_coefficients: 1280 -> 256 BICUBIC keeps (0x20, 0x40, 0x60).
  at::Tensor big = at::empty({1280, 1280, 3}, at::kByte);
  big.select(2, 0).fill_(0x20);
  big.select(2, 1).fill_(0x40);
  big.select(2, 2).fill_(0x60);
  at::Tensor small = io::resize_image(big, 256, 256, ResizeFilter::kBicubic);
  EXPECT_EQ(max_diff(small, big.slice(0, 0, 256).slice(1, 0, 256)), 0);
  // TestCoreResampleCoefficients.test_reduce: a 1-row image, left half 254, to 5 wide BICUBIC: the middle
  // sample is exactly 127 for very wide inputs.
  for (int64_t size = 400000; size < 400010; size += 2) {
    at::Tensor row = at::zeros({1, size, 1}, at::kByte);
    row.slice(1, 0, size / 2).fill_(254);
    EXPECT_EQ(io::resize_image(row, 1, 5, ResizeFilter::kBicubic)[0][2][0].item<int>(), 127) << size;
  }
}

TEST(ImageResize, HandComputedBilinear) {
  // Row [0, 90, 255] to 2 samples, bilinear. scale = 1.5 = filterscale, support 1.5.
  // Sample 0: center 0.75, taps x = 0, 1 with weights tri((x - 0.75 + 0.5) / 1.5) = 5/6, 1/2 -> 0.625, 0.375:
  //   0.375 * 90 = 33.75 -> 34. Sample 1: center 2.25, taps 1, 2 -> 0.375, 0.625: 33.75 + 159.375 = 193.125 -> 193.
  at::Tensor row = at::tensor({0, 90, 255}, at::kByte).view({1, 3, 1});
  at::Tensor r = io::resize_image(row, 1, 2, ResizeFilter::kBilinear);
  EXPECT_EQ(r[0][0][0].item<int>(), 34);
  EXPECT_EQ(r[0][1][0].item<int>(), 193);
  // Same along the vertical axis (the other pass).
  at::Tensor col = row.view({3, 1, 1});
  at::Tensor c = io::resize_image(col, 2, 1, ResizeFilter::kBilinear);
  EXPECT_EQ(c[0][0][0].item<int>(), 34);
  EXPECT_EQ(c[1][0][0].item<int>(), 193);
  // Same size: a copy.
  at::Tensor img = random_image(5, 4, 3, 9);
  EXPECT_EQ(max_diff(io::resize_image(img, 5, 4), img), 0);
  EXPECT_EQ(io::parse_resize_filter("bicubic"), ResizeFilter::kBicubic);
  expect_error([] { io::parse_resize_filter("cubic"); }, ExitCode::kUsage, {"cubic", "lanczos"});
}

using Size = std::pair<int64_t, int64_t>;

TEST(ImageSize, DeriveSizeAsDiffusersDocuments) {
  // Worked by hand from height = round(sqrt(max_area * h / w)) // mod * mod, width likewise with w / h.
  // 480x832 preset, mod 16 (A14B): square image -> sqrt(399360) = 631.9 -> 632 -> 624.
  EXPECT_EQ(io::derive_size(1024, 1024, 480 * 832, 16), Size(624, 624));
  // 1280x720 landscape: sqrt(224640) = 473.96 -> 474 -> 464; sqrt(709973.3) = 842.6 -> 843 -> 832.
  EXPECT_EQ(io::derive_size(720, 1280, 480 * 832, 16), Size(464, 832));
  // Portrait: the transpose.
  EXPECT_EQ(io::derive_size(1280, 720, 480 * 832, 16), Size(832, 464));
  // TI2V-5B: 704x1280 preset, mod 32: sqrt(506880) = 711.95 -> 712 -> 704; sqrt(1601991) = 1265.7 -> 1266 -> 1248.
  EXPECT_EQ(io::derive_size(720, 1280, 704 * 1280, 32), Size(704, 1248));
  // Python's round is half to even: sqrt(25 * 0.25) = 2.5 -> 2, sqrt(49 * 0.25) = 3.5 -> 4.
  EXPECT_EQ(io::derive_size(25, 100, 25, 1), Size(2, 10));
  EXPECT_EQ(io::derive_size(25, 100, 49, 1), Size(4, 14));
  // A side that would be 0 becomes mod.
  EXPECT_EQ(io::derive_size(1, 1000, 1024, 16).first, 16);
  expect_error([] { io::derive_size(0, 10, 100, 16); }, ExitCode::kFailure, {"positive"});
}

TEST(ImageReader, ConditioningImageMatchesFixture) {
  // The i2v fixture's VAE input: frame 0 is diffusers' preprocessed image.png (same size, no resize).
  const std::string base = std::string(OMNI_TEST_DATA_DIR) + "/reference/i2v-a14b-tiny/";
  io::SafetensorsFile ref(base + "expected.safetensors");
  at::Tensor expected = ref.read("vae_encode.in", at::kFloat).select(2, 0);  // [1, 3, 32, 48]
  at::Tensor got = io::load_conditioning_image(base + "image.png", 32, 48);
  ASSERT_EQ(got.sizes(), expected.sizes());
  const double err = (got - expected).abs().max().item<double>();
  std::printf("conditioning image vs fixture vae_encode.in[:, :, 0]: max abs %.3g\n", err);
  EXPECT_EQ(err, 0.0);
  // Resizing goes through LANCZOS by default; an explicit filter is honored.
  at::Tensor half = io::load_conditioning_image(base + "image.png", 16, 24);
  at::Tensor manual = io::resize_image(io::read_image(base + "image.png"), 16, 24, ResizeFilter::kLanczos);
  EXPECT_EQ((half[0].permute({1, 2, 0}) - (io::image_to_float(manual) * 2 - 1)).abs().max().item<double>(), 0.0);
}

}  // namespace
}  // namespace omni::media_test
