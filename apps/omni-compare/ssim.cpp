// SSIM (ssim.h). scikit-image filters the whole image (scipy.ndimage.gaussian_filter, mode 'reflect') and then
// crops the radius off the map before averaging. A map value inside the crop reads input samples at most one
// radius away, so none of it ever touches the padding: the boundary rule cannot change the result, and this
// computes the cropped region alone ("valid" filtering) with no padding at all. Rows first, then columns, as
// gaussian_filter does; each output row is summed on its own and the rows in order, so the value does not depend
// on the thread count.
#include "ssim.h"

#include <ATen/Parallel.h>

#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"

namespace omni::compare {
namespace {

// scipy.ndimage's _gaussian_kernel1d: exp(-x^2 / (2 sigma^2)) for x in [-radius, radius], normalised to sum 1.
std::array<double, kSsimWindow> gaussian_window() {
  std::array<double, kSsimWindow> w{};
  double sum = 0.0;
  for (int i = 0; i < kSsimWindow; ++i) {
    const double x = i - kSsimRadius;
    w[i] = std::exp(-0.5 / (kSsimSigma * kSsimSigma) * x * x);
    sum += w[i];
  }
  for (double& v : w) v /= sum;
  return w;
}

}  // namespace

double ssim(const at::Tensor& a, const at::Tensor& b, double data_range) {
  OMNI_CHECK(a.dim() == 3 && a.sizes() == b.sizes(), "ssim: frames must be [H, W, C] of one shape, got ", a.sizes(),
             " and ", b.sizes());
  const int64_t h = a.size(0), w = a.size(1), c = a.size(2);
  if (h < kSsimWindow || w < kSsimWindow || c == 0) return std::numeric_limits<double>::quiet_NaN();
  const at::Tensor xt = a.to(at::kDouble).contiguous(), yt = b.to(at::kDouble).contiguous();
  const double* x = xt.data_ptr<double>();
  const double* y = yt.data_ptr<double>();
  static const std::array<double, kSsimWindow> g = gaussian_window();
  const double c1 = (0.01 * data_range) * (0.01 * data_range), c2 = (0.03 * data_range) * (0.03 * data_range);
  const int64_t oh = h - 2 * kSsimRadius, ow = w - 2 * kSsimRadius;  // the cropped map
  // Vertical pass over the rows that survive the crop, every column: x, y, x^2, y^2, xy.
  std::vector<double> v(static_cast<size_t>(5 * oh * w));
  std::vector<double> row_sum(static_cast<size_t>(oh));
  double total = 0.0;
  for (int64_t ch = 0; ch < c; ++ch) {
    at::parallel_for(0, oh, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < w; ++j) {
          double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
          for (int k = 0; k < kSsimWindow; ++k) {
            const int64_t p = ((i + k) * w + j) * c + ch;
            const double xv = x[p], yv = y[p];
            sx += g[k] * xv;
            sy += g[k] * yv;
            sxx += g[k] * (xv * xv);
            syy += g[k] * (yv * yv);
            sxy += g[k] * (xv * yv);
          }
          double* o = &v[static_cast<size_t>(5 * (i * w + j))];
          o[0] = sx, o[1] = sy, o[2] = sxx, o[3] = syy, o[4] = sxy;
        }
    });
    // Horizontal pass and the SSIM map, one sum per row.
    at::parallel_for(0, oh, 8, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        double sum = 0.0;
        for (int64_t j = 0; j < ow; ++j) {
          double m[5] = {0, 0, 0, 0, 0};
          for (int k = 0; k < kSsimWindow; ++k) {
            const double* in = &v[static_cast<size_t>(5 * (i * w + j + k))];
            for (int q = 0; q < 5; ++q) m[q] += g[k] * in[q];
          }
          const double ux = m[0], uy = m[1];
          const double vx = m[2] - ux * ux, vy = m[3] - uy * uy, vxy = m[4] - ux * uy;
          sum += ((2 * ux * uy + c1) * (2 * vxy + c2)) / ((ux * ux + uy * uy + c1) * (vx + vy + c2));
        }
        row_sum[static_cast<size_t>(i)] = sum;
      }
    });
    double channel = 0.0;
    for (double s : row_sum) channel += s;
    total += channel / static_cast<double>(oh * ow);
  }
  return total / static_cast<double>(c);
}

}  // namespace omni::compare
