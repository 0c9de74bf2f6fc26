// Image resizing that reproduces Pillow's Image.resize bit for bit on 8-bit images, and the Wan2.2 I2V / TI2V
// output size derived from an image.
//
// What diffusers does with an image-to-video input: WanImageToVideoPipeline calls
// VideoProcessor.preprocess(image, height, width) -> VaeImageProcessor.resize, which for a PIL image is
// image.resize((width, height), resample=LANCZOS) (the processor's default `resample="lanczos"`); then
// np.array(image) / 255, 2x - 1, [1, 3, H, W]. The documented example first derives (height, width) from the
// image with max_area and mod_value (derive_size below) and calls image.resize((width, height)) itself, whose
// default filter is BICUBIC; the pipeline's own LANCZOS resize is then a no-op (same size). Both are here:
// ResizeFilter::kLanczos is what the pipeline does to an image of another size, kBicubic what the example does.
//
// Pillow's algorithm (libImaging/Resample.c of the pinned Pillow 13.0), reproduced exactly: separable, the
// horizontal pass first then the vertical one, except when the height shrinks by more than twice as many pixels
// as the width (then vertical first; Pillow 12 and older always went horizontal first), each pass only when
// that dimension changes; per output sample, center = (i + 0.5) * scale with
// scale = in / out; the filter is widened by max(scale, 1) (antialiasing when downscaling: support 1, 2, 3 for
// bilinear, bicubic (a = -0.5), lanczos (a = 3), times the factor); taps from int(center - support + 0.5) to
// int(center + support + 0.5) clipped to the image, weights filter((x - center + 0.5) / filterscale) normalized
// to sum 1, then rounded to fixed point with 22 fractional bits; each pass accumulates in integers from
// 2^21 (rounding), shifts by 22 and clamps to [0, 255], so the intermediate image is 8-bit like Pillow's.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <utility>

namespace omni::io {

enum class ResizeFilter { kBox, kBilinear, kHamming, kBicubic, kLanczos };

// "box", "bilinear", "hamming", "bicubic", "lanczos"; a usage error otherwise.
ResizeFilter parse_resize_filter(const std::string& name);

// `image` [H, W, C] uint8 (any C) -> [height, width, C] uint8 on the CPU, as Pillow's
// Image.resize((width, height), filter) gives for an RGB / L image.
at::Tensor resize_image(const at::Tensor& image, int64_t height, int64_t width,
                        ResizeFilter filter = ResizeFilter::kLanczos);

// The Wan I2V / TI2V output size for an image when --height / --width are not given, as diffusers documents it:
// aspect = image_h / image_w; height = round(sqrt(max_area * aspect)) // mod * mod and
// width = round(sqrt(max_area / aspect)) // mod * mod (round half to even, as Python's round on a float64), with
// max_area = the preset's height * width and mod = vae_scale_factor_spatial * patch_size (16 for A14B, 32 for
// TI2V-5B). A side that would round down to 0 (an extremely elongated image) becomes `mod`.
// Returns {height, width}.
std::pair<int64_t, int64_t> derive_size(int64_t image_h, int64_t image_w, int64_t max_area, int64_t mod);

}  // namespace omni::io
