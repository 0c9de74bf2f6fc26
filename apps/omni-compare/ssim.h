// SSIM of two frames, as scikit-image's structural_similarity computes it with gaussian_weights=True, sigma=1.5,
// use_sample_covariance=False, channel_axis=-1 (Wang, Bovik, Sheikh, Simoncelli, IEEE TIP 2004). The reference
// is tools/reference/ssim_reference.py (numpy, from the definition); tests/io/omni_compare_ssim_test.cpp holds
// the two together.
#pragma once

#include <ATen/ATen.h>

namespace omni::compare {

// The Gaussian window: sigma 1.5 truncated at 3.5 sigma, radius int(3.5 * 1.5 + 0.5) = 5 as scipy.ndimage
// rounds it, 11 taps.
inline constexpr double kSsimSigma = 1.5;
inline constexpr int kSsimRadius = 5;
inline constexpr int kSsimWindow = 2 * kSsimRadius + 1;

// Mean SSIM of frames a and b, [H, W, C] of any real dtype (computed in float64), values spanning
// `data_range` (1 for frames in [0, 1], 255 for uint8): per channel, the SSIM map with C1 = (0.01 L)^2,
// C2 = (0.03 L)^2 and population (co)variances E[xy] - E[x]E[y], averaged over the map cropped by the window
// radius on every side; then the mean over channels. NaN when H or W is below 11 (scikit-image refuses those).
double ssim(const at::Tensor& a, const at::Tensor& b, double data_range);

}  // namespace omni::compare
