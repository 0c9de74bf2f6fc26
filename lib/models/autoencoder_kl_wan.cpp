#include "models/autoencoder_kl_wan.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::models {

namespace {

using nlohmann::json;

// diffusers' defaults for the Wan2.1 VAE's latent statistics.
const std::vector<float> kDefaultLatentsMean{-0.7571f, -0.7089f, -0.9113f, 0.1075f,  -0.1745f, 0.9653f,
                                             -0.1517f, 1.5508f,  0.4134f,  -0.0715f, 0.5517f,  -0.3632f,
                                             -0.1922f, -0.9497f, 0.2503f,  -0.2921f};
const std::vector<float> kDefaultLatentsStd{2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f,
                                            3.2687f, 2.1526f, 2.8652f, 1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f};

int count_true(const std::vector<bool>& flags) {
  int n = 0;
  for (bool f : flags) n += f ? 1 : 0;
  return n;
}

}  // namespace

WanVaeConfig WanVaeConfig::from_json(const json& j, const std::string& source) {
  io::ConfigFile file(j, source, "AutoencoderKLWan");
  WanVaeConfig c;
  if (const json* cls = file.find("_class_name")) {
    OMNI_CHECK_INPUT(cls->is_string() && cls->get<std::string>() == "AutoencoderKLWan", source,
                     ": _class_name must be AutoencoderKLWan, got ", cls->dump());
  }
  // Absent keys keep diffusers' defaults (the WanVaeConfig initializers); null is a default only where
  // diffusers' signature allows None.
  if (const json* v = file.value("base_dim")) c.base_dim = io::json_as_positive_int(*v, "base_dim", source);
  if (const json* v = file.find("decoder_base_dim"))
    c.decoder_base_dim = io::json_as_positive_int(*v, "decoder_base_dim", source);
  if (const json* v = file.value("z_dim")) c.z_dim = io::json_as_positive_int(*v, "z_dim", source);
  if (const json* v = file.value("dim_mult")) {
    OMNI_CHECK_INPUT(v->is_array() && !v->empty(), source, ": 'dim_mult' must be a non-empty list, got ", v->dump());
    c.dim_mult.clear();
    for (const auto& e : *v) c.dim_mult.push_back(io::json_as_positive_int(e, "dim_mult", source));
  }
  if (const json* v = file.value("num_res_blocks"))
    c.num_res_blocks = io::json_as_positive_int(*v, "num_res_blocks", source);
  if (const json* v = file.value("attn_scales")) {
    // Only consulted by the Wan2.1 encoder, and empty in every released Wan VAE.
    OMNI_CHECK_INPUT(v->is_array() && v->empty(), source, ": 'attn_scales' ", v->dump(),
                     " is not supported (only [] is)");
  }
  if (const json* v = file.value("temperal_downsample")) {
    OMNI_CHECK_INPUT(v->is_array(), source, ": 'temperal_downsample' must be a list of booleans, got ", v->dump());
    c.temperal_downsample.clear();
    for (const auto& e : *v) c.temperal_downsample.push_back(io::json_as_bool(e, "temperal_downsample", source));
  }
  // Inference: unused, but a malformed value is still a bad file.
  if (const json* v = file.value("dropout")) io::json_as_number(*v, "dropout", source);
  const json* mean = file.value("latents_mean");
  const json* stdv = file.value("latents_std");
  const bool have_mean = mean != nullptr, have_std = stdv != nullptr;
  if (mean) c.latents_mean = io::json_as_floats(*mean, "latents_mean", source);
  if (stdv) c.latents_std = io::json_as_floats(*stdv, "latents_std", source);
  if (const json* v = file.value("is_residual")) c.is_residual = io::json_as_bool(*v, "is_residual", source);
  if (const json* v = file.value("in_channels")) c.in_channels = io::json_as_positive_int(*v, "in_channels", source);
  if (const json* v = file.value("out_channels")) c.out_channels = io::json_as_positive_int(*v, "out_channels", source);
  if (const json* v = file.find("patch_size")) c.patch_size = io::json_as_positive_int(*v, "patch_size", source);
  std::optional<int64_t> temporal, spatial;
  if (const json* v = file.find("scale_factor_temporal"))
    temporal = io::json_as_positive_int(*v, "scale_factor_temporal", source);
  if (const json* v = file.find("scale_factor_spatial"))
    spatial = io::json_as_positive_int(*v, "scale_factor_spatial", source);
  // clip_output (diffusers #12004, removed in #12041 a week later; the Wan2.2 Diffusers repositories were
  // converted in between and carry it) clamped the decode to [-1, 1], which the video post-processing does
  // anyway: diffusers 0.40 ignores it, and so do we, with the warning (said once the file is known to be good).
  if (!have_mean) c.latents_mean = kDefaultLatentsMean;
  if (!have_std) c.latents_std = kDefaultLatentsStd;
  OMNI_CHECK_INPUT(static_cast<int64_t>(c.latents_mean.size()) == c.z_dim, source, ": 'latents_mean' has ",
                   c.latents_mean.size(), " values", have_mean ? "" : " (diffusers' default)", ", z_dim is ", c.z_dim);
  OMNI_CHECK_INPUT(static_cast<int64_t>(c.latents_std.size()) == c.z_dim, source, ": 'latents_std' has ",
                   c.latents_std.size(), " values", have_std ? "" : " (diffusers' default)", ", z_dim is ", c.z_dim);
  for (float s : c.latents_std) OMNI_CHECK_INPUT(s > 0.f, source, ": 'latents_std' values must be positive, found ", s);
  OMNI_CHECK_INPUT(c.temperal_downsample.size() + 1 == c.dim_mult.size(), source, ": 'temperal_downsample' needs ",
                   c.dim_mult.size() - 1, " entries (one per level of dim_mult but the last), got ",
                   c.temperal_downsample.size());
  const int64_t p = c.patch();
  OMNI_CHECK_INPUT(c.in_channels % (p * p) == 0 && c.out_channels % (p * p) == 0 &&
                       c.in_channels / (p * p) == c.out_channels / (p * p),
                   source, ": in_channels ", c.in_channels, " / out_channels ", c.out_channels,
                   " must both be video channels x patch_size^2 (patch_size ", p, ")");

  // The pipelines size latents with the scale factors, so they must agree with the architecture.
  const int64_t arch_temporal = int64_t{1} << count_true(c.temperal_downsample);
  const int64_t arch_spatial = (int64_t{1} << (c.dim_mult.size() - 1)) * p;
  if (!temporal) temporal = arch_temporal;
  if (!spatial) spatial = arch_spatial;
  OMNI_CHECK_INPUT(*temporal == arch_temporal, source, ": scale_factor_temporal is ", *temporal,
                   " but temperal_downsample gives ", arch_temporal);
  OMNI_CHECK_INPUT(*spatial == arch_spatial, source, ": scale_factor_spatial is ", *spatial, " but ",
                   c.dim_mult.size() - 1, " downsampling levels and patch_size ", p, " give ", arch_spatial);
  c.scale_factor_temporal = *temporal;
  c.scale_factor_spatial = *spatial;

  if (c.is_residual) {
    // AvgDown3D / DupUp3D regroup channels: the factors must divide evenly at every level.
    const size_t levels = c.dim_mult.size();
    const int64_t dec = c.decoder_base_dim.value_or(c.base_dim);
    std::vector<int64_t> enc_dims{c.base_dim}, dec_dims{dec * c.dim_mult.back()};
    for (size_t i = 0; i < levels; ++i) {
      enc_dims.push_back(c.base_dim * c.dim_mult[i]);
      dec_dims.push_back(dec * c.dim_mult[levels - 1 - i]);
    }
    for (size_t i = 0; i < levels; ++i) {
      const bool last = i + 1 == levels;
      const int64_t down = last ? 1 : (c.temperal_downsample[i] ? 2 : 1) * 4;
      OMNI_CHECK_INPUT(enc_dims[i] * down % enc_dims[i + 1] == 0, source, ": encoder level ", i, " (", enc_dims[i],
                       " -> ", enc_dims[i + 1], " channels) cannot use the residual AvgDown3D shortcut");
      if (last) continue;
      const int64_t up = (c.temperal_downsample[levels - 2 - i] ? 2 : 1) * 4;
      OMNI_CHECK_INPUT(dec_dims[i + 1] * up % dec_dims[i] == 0, source, ": decoder level ", i, " (", dec_dims[i],
                       " -> ", dec_dims[i + 1], " channels) cannot use the residual DupUp3D shortcut");
    }
  }
  file.warn_unknown();
  return c;
}

WanVaeConfig WanVaeConfig::from_file(const std::string& path) {
  return from_json(io::read_json(path), path);
}

AutoencoderKLWan::AutoencoderKLWan(const WanVaeConfig& config) : config_(config) {
  using K = std::array<int64_t, 3>;
  WanEncoderConfig enc;
  enc.in_channels = config.in_channels;
  enc.dim = config.base_dim;
  enc.out_channels = 2 * config.z_dim;
  enc.dim_mult = config.dim_mult;
  enc.num_res_blocks = config.num_res_blocks;
  enc.temporal_downsample = config.temperal_downsample;
  enc.is_residual = config.is_residual;
  encoder_ = child("encoder", std::make_unique<WanEncoder3d>(enc));
  quant_conv_ = child("quant_conv", std::make_unique<WanCausalConv3d>(2 * config.z_dim, 2 * config.z_dim, K{1, 1, 1}));
  post_quant_conv_ =
      child("post_quant_conv", std::make_unique<WanCausalConv3d>(config.z_dim, config.z_dim, K{1, 1, 1}));
  WanDecoderConfig dec;
  dec.dim = config.decoder_base_dim.value_or(config.base_dim);
  dec.z_dim = config.z_dim;
  dec.dim_mult = config.dim_mult;
  dec.num_res_blocks = config.num_res_blocks;
  dec.temporal_upsample.assign(config.temperal_downsample.rbegin(), config.temperal_downsample.rend());
  dec.out_channels = config.out_channels;
  dec.is_residual = config.is_residual;
  decoder_ = child("decoder", std::make_unique<WanDecoder3d>(dec));
}

std::unique_ptr<AutoencoderKLWan> AutoencoderKLWan::load(const std::string& component_dir, at::ScalarType dtype,
                                                         const at::Device& device) {
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16, "the VAE runs in float32 or bfloat16, not ",
                   c10::toString(dtype));
  return load(WanVaeConfig::from_file(component_dir + "/config.json"), io::Checkpoint::open(component_dir), dtype,
              device);
}

std::unique_ptr<AutoencoderKLWan> AutoencoderKLWan::load(const WanVaeConfig& config, const io::Checkpoint& ckpt,
                                                         at::ScalarType dtype, const at::Device& device) {
  OMNI_CHECK_USAGE(dtype == at::kFloat || dtype == at::kBFloat16, "the VAE runs in float32 or bfloat16, not ",
                   c10::toString(dtype));
  auto model = std::make_unique<AutoencoderKLWan>(config);
  load_state(*model, ckpt, dtype, device);
  return model;
}

at::ScalarType AutoencoderKLWan::param_dtype() const {
  OMNI_CHECK(quant_conv_->weight().defined(), "AutoencoderKLWan: parameters are not loaded");
  return quant_conv_->weight().scalar_type();
}

at::Tensor AutoencoderKLWan::encode(const at::Tensor& video) const {
  const auto dtype = param_dtype();
  const int64_t s = config_.scale_factor_spatial, z = config_.z_dim;
  OMNI_CHECK_USAGE(video.dim() == 5 && video.size(1) == config_.video_channels(), "VAE encode expects a video [B, ",
                   config_.video_channels(), ", F, H, W], got ", video.sizes());
  OMNI_CHECK_USAGE(video.size(2) >= 1 && video.size(3) % s == 0 && video.size(4) % s == 0,
                   "VAE encode: height and width must be multiples of ", s, " and there must be frames, got ",
                   video.sizes());
  at::Tensor x = wan_patchify(video.to(quant_conv_->weight().device(), dtype), config_.patch());
  const int64_t chunks = 1 + (x.size(2) - 1) / 4;
  // quant_conv is per voxel: only its first z output channels (the mean) are needed, chunk by chunk.
  const at::Tensor mean_w = quant_conv_->weight().narrow(0, 0, z);
  const at::Tensor mean_b = quant_conv_->bias().narrow(0, 0, z);
  WanFeatCache cache;
  std::vector<at::Tensor> pieces;
  for (int64_t i = 0; i < chunks; ++i) {
    cache.begin_chunk();
    at::Tensor chunk = i == 0 ? x.narrow(2, 0, 1) : x.narrow(2, 1 + 4 * (i - 1), 4);  // [B, C, 1 or 4, H, W]
    at::Tensor h = encoder_->forward(chunk, cache);                                   // [B, 2z, t, h, w]
    pieces.push_back(at::conv3d(h, mean_w, mean_b));                                  // [B, z, t, h, w]
  }
  return at::cat(pieces, 2);
}

at::Tensor AutoencoderKLWan::decode(const at::Tensor& latents, const VaeBands* bands, int root) const {
  const auto dtype = param_dtype();
  const int64_t s = config_.scale_factor_spatial, ft = config_.scale_factor_temporal, p = config_.patch();
  OMNI_CHECK_USAGE(latents.dim() == 5 && latents.size(1) == config_.z_dim && latents.size(2) >= 1,
                   "VAE decode expects latents [B, ", config_.z_dim, ", T, h, w], got ", latents.sizes());
  at::Tensor x = latents.to(quant_conv_->weight().device(), dtype);
  if (bands != nullptr) {
    // This rank's rows, decoded with the neighbours' halos; the whole video gathered on `root`.
    x = x.narrow(3, bands->latent_begin(bands->index()), bands->latent_rows(bands->index()));  // [B, z, T, hb, w]
    ScopedVaeBands scope(bands);
    at::Tensor band = decode(x);  // [B, 3, F, hb * s, w * s]
    return bands->gather_rows(band, 3, root);
  }
  const int64_t b = x.size(0), t = x.size(2);
  at::Tensor out = at::empty({b, config_.video_channels(), 1 + ft * (t - 1), x.size(3) * s, x.size(4) * s},
                             x.options());  // [B, 3, F, H, W]
  WanFeatCache cache;
  int64_t frame = 0;
  for (int64_t i = 0; i < t; ++i) {
    cache.begin_chunk();
    at::Tensor zi = post_quant_conv_->forward(x.narrow(2, i, 1));            // [B, z, 1, h, w]
    at::Tensor y = wan_unpatchify(decoder_->forward(zi, cache, i == 0), p);  // [B, 3, n, H, W]
    const int64_t n = i == 0 ? 1 : ft;  // the first latent frame is one video frame, later ones ft each
    OMNI_CHECK(y.size(2) == n && y.sizes() == out.narrow(2, frame, n).sizes(), "VAE decode: latent frame ", i,
               " decoded to ", y.sizes(), ", expected ", n, " frames of ", out.sizes());
    out.narrow(2, frame, n).copy_(y.clamp_(-1.0, 1.0));
    frame += y.size(2);
  }
  return out;
}

at::Tensor AutoencoderKLWan::latents_mean(const at::Device& device) const {
  return at::tensor(at::ArrayRef<float>(config_.latents_mean), at::TensorOptions().dtype(at::kFloat))
      .view({1, config_.z_dim, 1, 1, 1})
      .to(device);
}

at::Tensor AutoencoderKLWan::latents_std(const at::Device& device) const {
  return at::tensor(at::ArrayRef<float>(config_.latents_std), at::TensorOptions().dtype(at::kFloat))
      .view({1, config_.z_dim, 1, 1, 1})
      .to(device);
}

at::Tensor AutoencoderKLWan::normalize_latents(const at::Tensor& z) const {
  // The pipelines compute 1 / std in float32 and multiply by it (they never divide by std).
  at::Tensor inv_std = at::reciprocal(latents_std(z.device())).to(z.scalar_type());
  return (z - latents_mean(z.device()).to(z.scalar_type())) * inv_std;
}

at::Tensor AutoencoderKLWan::denormalize_latents(const at::Tensor& z) const {
  at::Tensor inv_std = at::reciprocal(latents_std(z.device())).to(z.scalar_type());
  return z / inv_std + latents_mean(z.device()).to(z.scalar_type());
}

at::Tensor wan_patchify(const at::Tensor& x, int64_t patch) {
  if (patch == 1) return x;
  const int64_t b = x.size(0), c = x.size(1), f = x.size(2), h = x.size(3), w = x.size(4);
  OMNI_CHECK_USAGE(h % patch == 0 && w % patch == 0, "patchify: height ", h, " and width ", w, " must be multiples of ",
                   patch);
  return x.reshape({b, c, f, h / patch, patch, w / patch, patch})
      .permute({0, 1, 6, 4, 2, 3, 5})  // [B, C, pw, ph, F, H/p, W/p]
      .reshape({b, c * patch * patch, f, h / patch, w / patch});
}

at::Tensor wan_unpatchify(const at::Tensor& x, int64_t patch) {
  if (patch == 1) return x;
  const int64_t b = x.size(0), cp = x.size(1), f = x.size(2), h = x.size(3), w = x.size(4);
  const int64_t c = cp / (patch * patch);
  return x.reshape({b, c, patch, patch, f, h, w})
      .permute({0, 1, 4, 5, 3, 6, 2})  // [B, C, F, h, ph, w, pw]
      .reshape({b, c, f, h * patch, w * patch});
}

}  // namespace omni::models
