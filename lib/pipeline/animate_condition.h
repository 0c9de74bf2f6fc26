// Wan2.2-Animate's conditioning in latent space, as diffusers' WanAnimatePipeline builds it (get_i2v_mask,
// pad_video_frames, the replace mode's mask): the pieces that need no VAE. WanPipeline::generate_animate encodes the
// clips and joins them.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace omni::pipeline {

// The source frame of frame `j` of a video of `n` frames padded by reflection (pad_video_frames, Wan2.2's
// inputs_padding): 0, 1, ..., n - 1, n - 2, ..., 0, 1, ... A one-frame video repeats its frame (diffusers fails).
int64_t reflected_frame(int64_t j, int64_t n);

// get_i2v_mask: the pixel-frame mask of a segment as the transformer's 4 mask channels. `pixels` is
// [1, 1, (T - 1) tf + 1, h, w] (replace mode: 1 where the background is kept) or undefined (zeros); its first
// `mask_len` frames are set to 1 (the previous segment's frames), the first frame is repeated tf times and each
// latent frame's tf pixel frames become its channels. [1, tf, T, h, w] float32.
at::Tensor animate_latent_mask(const at::Tensor& pixels, int64_t latent_frames, int64_t height, int64_t width,
                               int64_t mask_len, int64_t temporal_factor, const at::TensorOptions& options);

// Replace mode's mask at latent size: 1 - mask ([1, 1, F, H, W] in [0, 1], white where the character goes),
// nearest-neighbour downsampled to h x w per frame (F.interpolate(mode="nearest")). [1, 1, F, h, w].
at::Tensor animate_background_mask(const at::Tensor& mask, int64_t height, int64_t width);

}  // namespace omni::pipeline
