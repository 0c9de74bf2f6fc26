#include "io/image_resize.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"

namespace omni::io {
namespace {

// Pillow's filter kernels (libImaging/Resample.c), including its float literals in the Hamming window.
double box_filter(double x) {
  return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
}

double bilinear_filter(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double hamming_filter(double x) {
  x = std::fabs(x);
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x *= M_PI;
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));
}

double bicubic_filter(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= M_PI;
  return std::sin(x) / x;
}

double lanczos_filter(double x) {
  return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0;
}

struct Filter {
  double (*fn)(double);
  double support;
};

Filter filter_for(ResizeFilter f) {
  switch (f) {
    case ResizeFilter::kBox:
      return {box_filter, 0.5};
    case ResizeFilter::kBilinear:
      return {bilinear_filter, 1.0};
    case ResizeFilter::kHamming:
      return {hamming_filter, 1.0};
    case ResizeFilter::kBicubic:
      return {bicubic_filter, 2.0};
    case ResizeFilter::kLanczos:
      return {lanczos_filter, 3.0};
  }
  OMNI_FAIL("unknown resize filter");
}

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's fixed point: 8 bits of value, 2 of headroom

// Per output sample: the first input tap, the number of taps and their fixed-point weights (ksize each).
struct Coefficients {
  int ksize = 0;
  std::vector<int> first;
  std::vector<int> count;
  std::vector<int32_t> weights;
};

Coefficients precompute(int in_size, int out_size, const Filter& filter) {
  const double scale = static_cast<double>(in_size) / out_size;
  const double filterscale = std::max(scale, 1.0);
  const double support = filter.support * filterscale;
  Coefficients c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.first.resize(out_size);
  c.count.resize(out_size);
  c.weights.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> k(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    // Truncation toward zero, as Pillow's (int) casts; negative starts are clipped to 0 anyway.
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      k[x] = filter.fn((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    int32_t* out = &c.weights[static_cast<size_t>(xx) * c.ksize];
    for (int x = 0; x < xmax; ++x) {
      const double w = ww != 0.0 ? k[x] / ww : k[x];
      const double fixed = w * (1 << kPrecisionBits);
      out[x] = static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    c.first[xx] = xmin;
    c.count[xx] = xmax;
  }
  return c;
}

inline uint8_t clip8(int64_t acc) {
  const int64_t v = acc >> kPrecisionBits;  // arithmetic shift: floor, as Pillow's table lookup
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// [H, W, C] -> [H, out_w, C]
std::vector<uint8_t> resample_horizontal(const uint8_t* in, int h, int w, int ch, int out_w, const Filter& f) {
  const Coefficients c = precompute(w, out_w, f);
  std::vector<uint8_t> out(static_cast<size_t>(h) * out_w * ch);
  for (int y = 0; y < h; ++y) {
    const uint8_t* row = in + static_cast<size_t>(y) * w * ch;
    uint8_t* orow = out.data() + static_cast<size_t>(y) * out_w * ch;
    for (int xx = 0; xx < out_w; ++xx) {
      const int32_t* k = &c.weights[static_cast<size_t>(xx) * c.ksize];
      for (int b = 0; b < ch; ++b) {
        int64_t acc = int64_t{1} << (kPrecisionBits - 1);
        for (int x = 0; x < c.count[xx]; ++x) acc += int64_t{row[(x + c.first[xx]) * ch + b]} * k[x];
        orow[xx * ch + b] = clip8(acc);
      }
    }
  }
  return out;
}

// [H, W, C] -> [out_h, W, C]
std::vector<uint8_t> resample_vertical(const uint8_t* in, int h, int w, int ch, int out_h, const Filter& f) {
  const Coefficients c = precompute(h, out_h, f);
  const size_t row_len = static_cast<size_t>(w) * ch;
  std::vector<uint8_t> out(static_cast<size_t>(out_h) * row_len);
  std::vector<int64_t> acc(row_len);
  for (int yy = 0; yy < out_h; ++yy) {
    const int32_t* k = &c.weights[static_cast<size_t>(yy) * c.ksize];
    std::fill(acc.begin(), acc.end(), int64_t{1} << (kPrecisionBits - 1));
    for (int y = 0; y < c.count[yy]; ++y) {
      const uint8_t* row = in + static_cast<size_t>(y + c.first[yy]) * row_len;
      for (size_t i = 0; i < row_len; ++i) acc[i] += int64_t{row[i]} * k[y];
    }
    uint8_t* orow = out.data() + static_cast<size_t>(yy) * row_len;
    for (size_t i = 0; i < row_len; ++i) orow[i] = clip8(acc[i]);
  }
  return out;
}

}  // namespace

ResizeFilter parse_resize_filter(const std::string& name) {
  if (name == "box") return ResizeFilter::kBox;
  if (name == "bilinear") return ResizeFilter::kBilinear;
  if (name == "hamming") return ResizeFilter::kHamming;
  if (name == "bicubic") return ResizeFilter::kBicubic;
  if (name == "lanczos") return ResizeFilter::kLanczos;
  OMNI_FAIL_USAGE("unknown resize filter '", name, "'; expected box, bilinear, hamming, bicubic or lanczos");
}

at::Tensor resize_image(const at::Tensor& image, int64_t height, int64_t width, ResizeFilter filter) {
  OMNI_CHECK(image.defined() && image.dim() == 3 && image.scalar_type() == at::kByte,
             "resize_image: expected an [H, W, C] uint8 image, got ",
             image.defined() ? image.sizes() : at::IntArrayRef{}, " ",
             image.defined() ? at::toString(image.scalar_type()) : "undefined");
  OMNI_CHECK(height > 0 && width > 0, "resize_image: target size must be positive, got ", height, "x", width);
  at::Tensor src = image.to(at::kCPU).contiguous();
  const int h = static_cast<int>(src.size(0)), w = static_cast<int>(src.size(1)), ch = static_cast<int>(src.size(2));
  OMNI_CHECK(h > 0 && w > 0 && ch > 0, "resize_image: empty image ", src.sizes());
  if (h == height && w == width) return src.clone();  // Pillow returns a copy for the same size

  const Filter f = filter_for(filter);
  std::vector<uint8_t> buf(src.data_ptr<uint8_t>(), src.data_ptr<uint8_t>() + src.numel());
  // Two passes through uint8, in Pillow 13's order (ImagingResampleInner): the vertical pass first when the height
  // shrinks by more than twice as many pixels as the width does, else the horizontal one. The order changes
  // the rounding of the intermediate, so the pixels.
  const int out_h = static_cast<int>(height), out_w = static_cast<int>(width);
  const bool vertical_first = h - out_h > 0 && h - out_h > (w - out_w) * 2;
  if (vertical_first) {
    buf = resample_vertical(buf.data(), h, w, ch, out_h, f);  // [out_h, w, C]
    if (out_w != w) buf = resample_horizontal(buf.data(), out_h, w, ch, out_w, f);
  } else {
    if (out_w != w) buf = resample_horizontal(buf.data(), h, w, ch, out_w, f);  // [h, out_w, C]
    if (out_h != h) buf = resample_vertical(buf.data(), h, out_w, ch, out_h, f);
  }
  at::Tensor out = at::empty({height, width, ch}, at::kByte);  // [height, width, C]
  std::copy(buf.begin(), buf.end(), out.data_ptr<uint8_t>());
  return out;
}

std::pair<int64_t, int64_t> derive_size(int64_t image_h, int64_t image_w, int64_t max_area, int64_t mod) {
  OMNI_CHECK(image_h > 0 && image_w > 0 && max_area > 0 && mod > 0, "derive_size: image ", image_h, "x", image_w,
             ", max_area ", max_area, ", mod ", mod, " must all be positive");
  const double aspect = static_cast<double>(image_h) / static_cast<double>(image_w);
  // std::nearbyint rounds half to even in the default rounding mode, like Python's round().
  int64_t h = static_cast<int64_t>(std::nearbyint(std::sqrt(static_cast<double>(max_area) * aspect))) / mod * mod;
  int64_t w = static_cast<int64_t>(std::nearbyint(std::sqrt(static_cast<double>(max_area) / aspect))) / mod * mod;
  return {std::max(h, mod), std::max(w, mod)};
}

}  // namespace omni::io
