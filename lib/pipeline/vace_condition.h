// VACE's context in latent space, as diffusers' WanVACEPipeline builds it (prepare_video_latents and
// prepare_masks): the pieces that need no VAE. WanPipeline::prepare_vace_condition encodes the clips and joins them.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace omni::pipeline {

// The pixel mask split for the VAE: 1 where `mask` ([1, C, F, H, W] in [0, 1]) is above 0.5, else 0, per channel
// (torch.where(mask > 0.5, 1.0, 0.0)). The control video times (1 - it) is encoded as the inactive latents, times
// it as the reactive ones.
at::Tensor vace_binary_mask(const at::Tensor& mask);

// The mask as the transformer's context takes it (prepare_masks): channel 0 of `mask` ([1, C, F, H, W] in
// [0, 1], not thresholded), each latent cell's spatial_factor x spatial_factor pixels as channels (row-major
// within the cell), the F frames resampled to (F + tf - 1) / tf latent frames by nearest-exact, and
// `reference_images` zero frames in front. [1, sf * sf, R + T, H / sf, W / sf]. H and W must be multiples of
// spatial_factor x patch (job::check_video).
at::Tensor vace_latent_mask(const at::Tensor& mask, int64_t temporal_factor, int64_t spatial_factor,
                            int reference_images);

}  // namespace omni::pipeline
