// AutoencoderKLWan (diffusers autoencoder_kl_wan.py): the Wan2.1 VAE (z 16, spatial 8x) and the Wan2.2 VAE
// (z 48, residual blocks, patch size 2, spatial 16x), both 4x in time.
//
// encode() runs the clip through the encoder in chunks of frames [0], [1..4], [5..8], ... sharing one frame
// cache and returns the latent mean (the pipelines use the mean, never a sample). decode() runs one latent
// frame at a time through the decoder, writing each piece into the preallocated output, so memory beyond the
// output itself does not grow with the clip length. The VAE stays whole on every rank (no HSDP).
//
// Parameters are held and computed in the model dtype (float32 or bfloat16), as diffusers does with
// torch_dtype; inputs are cast to it and outputs returned in it.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/module.h"
#include "models/wan_vae_bands.h"
#include "models/wan_vae_causal_conv3d.h"
#include "models/wan_vae_decoder.h"
#include "models/wan_vae_encoder.h"

namespace omni::models {

// vae/config.json. Missing keys take diffusers' defaults (the Wan2.1 VAE).
struct WanVaeConfig {
  int64_t base_dim = 96;
  std::optional<int64_t> decoder_base_dim;  // null: base_dim
  int64_t z_dim = 16;
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<bool> temperal_downsample{false, true, true};  // diffusers' spelling
  bool is_residual = false;
  int64_t in_channels = 3;   // encoder input channels (after patchify)
  int64_t out_channels = 3;  // decoder output channels (before unpatchify)
  std::optional<int64_t> patch_size;
  int64_t scale_factor_temporal = 4;
  int64_t scale_factor_spatial = 8;
  std::vector<float> latents_mean;  // z_dim values
  std::vector<float> latents_std;   // z_dim values

  // `source` names the file in error messages. Unsupported values (attention scales, a non-AutoencoderKLWan
  // class, inconsistent scale factors, ...) are input errors naming the key; unknown keys are ignored with one
  // warning (io::ConfigFile).
  static WanVaeConfig from_json(const nlohmann::json& json, const std::string& source);
  static WanVaeConfig from_file(const std::string& path);

  int64_t patch() const { return patch_size.value_or(1); }
  int64_t video_channels() const { return in_channels / (patch() * patch()); }  // RGB: 3
};

class AutoencoderKLWan : public Module {
 public:
  // Builds the module tree with unloaded parameters (fill them with load_state, or by hand to generate a
  // checkpoint).
  explicit AutoencoderKLWan(const WanVaeConfig& config);

  // Reads <component_dir>/config.json and the checkpoint in `component_dir`; parameters in `dtype` on `device`.
  static std::unique_ptr<AutoencoderKLWan> load(const WanVaeConfig& config, const io::Checkpoint& ckpt,
                                                at::ScalarType dtype, const at::Device& device);
  static std::unique_ptr<AutoencoderKLWan> load(const std::string& component_dir, at::ScalarType dtype,
                                                const at::Device& device = at::kCPU);

  const WanVaeConfig& config() const { return config_; }

  // video [B, 3, F, H, W] in [-1, 1] -> latent mean [B, z, 1 + (F - 1) / 4, H / s, W / s] (s: spatial factor).
  // Like diffusers, trailing frames that do not fill a chunk of 4 are not encoded.
  at::Tensor encode(const at::Tensor& video) const;
  // latents [B, z, T, h, w] (denormalized) -> video [B, 3, 1 + 4 (T - 1), h * s, w * s] clamped to [-1, 1].
  // With `bands` (every rank of its group calls this with the same latents), each rank decodes its band of
  // rows and group rank `root` gets the whole video (a strided view); the others get an undefined tensor.
  at::Tensor decode(const at::Tensor& latents, const VaeBands* bands = nullptr, int root = 0) const;

  // The pipelines' latent normalization, with their operation order: (z - mean) * (1 / std) to normalize,
  // z / (1 / std) + mean to undo it, per channel, in z's dtype.
  at::Tensor normalize_latents(const at::Tensor& z) const;
  at::Tensor denormalize_latents(const at::Tensor& z) const;
  // [1, z, 1, 1, 1] float32 tensors of latents_mean / latents_std on `device`.
  at::Tensor latents_mean(const at::Device& device = at::kCPU) const;
  at::Tensor latents_std(const at::Device& device = at::kCPU) const;

 private:
  at::ScalarType param_dtype() const;

  WanVaeConfig config_;
  WanEncoder3d* encoder_;
  WanCausalConv3d* quant_conv_;
  WanCausalConv3d* post_quant_conv_;
  WanDecoder3d* decoder_;
};

// [B, C, F, H, W] -> [B, C*p*p, F, H/p, W/p], channel index c*p*p + w_offset*p + h_offset (diffusers' patchify).
at::Tensor wan_patchify(const at::Tensor& x, int64_t patch);
// The inverse: [B, C*p*p, F, h, w] -> [B, C, F, h*p, w*p].
at::Tensor wan_unpatchify(const at::Tensor& x, int64_t patch);

}  // namespace omni::models
