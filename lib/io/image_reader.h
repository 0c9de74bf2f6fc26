// Image input, read the way diffusers' load_image reads it (PIL.Image.open, ImageOps.exif_transpose,
// convert("RGB")), to the same bytes: JPEG through libjpeg-turbo and WebP through libwebp, the libraries Pillow
// decodes them with (io/jpeg_decoder.h, io/webp_decoder.h); PNG, BMP, TGA, GIF (first frame), PSD, HDR and PNM
// through stb_image, whose PNG decode equals Pillow's (a 16-bit gray PNG clipped at 255 as Pillow's "I;16"
// conversion clips it). The orientation comes from the EXIF or XMP block, as Pillow finds it (io/image_metadata.h).
// tools/reference/image_corpus.py and ctest io.image_corpus hold every format and mode to load_image's pixels;
// docs/DESIGN.md lists what differs (a GIF's transparent pixels).
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "io/image_resize.h"

namespace omni::io {

// [H, W, 3] uint8 RGB on the CPU. A missing, unreadable, corrupt or unsupported file is an input error (exit 3)
// naming the file, the decoder's reason and the formats accepted.
at::Tensor read_image(const std::string& path);

// The {height, width} read_image's image has (after the EXIF orientation), from the file's headers and metadata
// alone: no pixel is decoded. Input errors as read_image's for a file that is no image; a file whose pixels
// are broken past its header passes here and fails in read_image.
std::pair<int64_t, int64_t> image_size(const std::string& path);

// [H, W, 3] uint8 -> float32 in [0, 1] (x / 255).
at::Tensor image_to_float(const at::Tensor& image);

// The conditioning image of an image-to-video run as diffusers' VideoProcessor.preprocess(image, height, width)
// gives it for a PIL image: resized to (height, width) with `filter` when its size differs (LANCZOS, the
// processor's default), x / 255, 2x - 1, as [1, 3, height, width] float32 in [-1, 1] on the CPU.
at::Tensor load_conditioning_image(const std::string& path, int64_t height, int64_t width,
                                   ResizeFilter filter = ResizeFilter::kLanczos);
// The same for an image already read: [h, w, 3] uint8 -> [1, 3, height, width] float32 in [-1, 1].
at::Tensor conditioning_image(const at::Tensor& image, int64_t height, int64_t width,
                              ResizeFilter filter = ResizeFilter::kLanczos);

// A VACE reference image as diffusers' WanVACEPipeline.preprocess_conditions places it, from the image as read
// ([h, w, 3] uint8): VideoProcessor.preprocess with no size (its own size floored to multiples of `multiple`, the
// VAE's spatial factor, LANCZOS when that changes it), scaled by min(height / h, width / w) with F.interpolate
// (bilinear, align_corners=False, no antialias; each side int(side x scale)) and centred on a white canvas
// (ones). [3, height, width] float32 in [-1, 1]. An image smaller than `multiple` is an input error naming `path`.
at::Tensor vace_reference_image(const at::Tensor& image, int64_t height, int64_t width, int64_t multiple,
                                const std::string& path);

// Wan2.2-Animate's character image as diffusers' WanAnimateImageProcessor.preprocess(image, height, width,
// resize_mode="fill") gives it (WanAnimatePipeline: fill colour 0, LANCZOS in effect): scaled to fit height x width
// with its aspect kept (sides by Python's integer arithmetic), centred on a black canvas. From the image as read
// ([h, w, 3] uint8) to [1, 3, height, width] float32 in [-1, 1].
at::Tensor animate_character_image(const at::Tensor& image, int64_t height, int64_t width);

// Wan2.2-S2V's reference image as WanS2V.generate makes it (torchvision on a PIL image): Resize(min(height,
// width)) (the shorter side to that size, the longer to int(size x long / short), Pillow's bilinear), then
// CenterCrop((height, width)) (black padding where the resized image is smaller: Wan2.2 rounds each side up to 64
// on its own), ToTensor, 2x - 1. From the image as read ([h, w, 3] uint8) to [1, 3, height, width] float32.
at::Tensor s2v_reference_image(const at::Tensor& image, int64_t height, int64_t width);
// Wan2.2-S2V's pose frames as load_pose_cond makes them (torchvision on a float tensor): [N, h, w, 3] uint8 ->
// x / 255 x 2 - 1, Resize(min(height, width)) (bilinear with antialias, torchvision's default for tensors), then
// CenterCrop((height, width)), as [1, 3, N, height, width] float32.
at::Tensor s2v_pose_frames(const at::Tensor& frames, int64_t height, int64_t width);

// [..., 3] uint8 RGB -> [...] uint8 luma, as Pillow's convert("L") (ITU-R 601-2, fixed point).
at::Tensor luma_levels(const at::Tensor& rgb);

// Applies an EXIF orientation (1..8) to [H, W, C], as Pillow's ImageOps.exif_transpose.
at::Tensor apply_exif_orientation(const at::Tensor& image, int orientation);

}  // namespace omni::io
