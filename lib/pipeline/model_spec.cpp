#include "pipeline/model_spec.h"

#include <algorithm>

#include "core/error.h"
#include "io/safetensors.h"
#include "models/wan_s2v_audio_encoder.h"

namespace omni::pipeline {

const char* ModelSpec::expert_name(int expert) {
  return expert == 0 ? "transformer" : "transformer_2";
}

int ModelSpec::spatial_multiple() const {
  const auto& p = experts.at(0).patch_size;
  return static_cast<int>(vae.scale_factor_spatial * std::max(p[1], p[2]));
}

bool ModelSpec::stores_float8(int expert) const {
  const io::Checkpoint& ckpt = dir->checkpoint(expert_name(expert));
  return std::any_of(ckpt.names().begin(), ckpt.names().end(),
                     [&](const std::string& n) { return ckpt.float8_row_scales(n).defined(); });
}

namespace {

// WanModel_S2V's attention blocks as a WanTransformer3DModel config (the same blocks: Wan's attention, text
// cross-attention and FFN): the sizes the memory and time planners and the layout checks read.
models::WanTransformerConfig s2v_blocks_config(const models::WanS2VTransformerConfig& s) {
  models::WanTransformerConfig c;
  c.patch_size = s.patch_size;
  c.num_attention_heads = s.num_heads;
  c.attention_head_dim = s.head_dim();
  c.in_channels = s.in_dim;
  c.out_channels = s.out_dim;
  c.text_dim = s.text_dim;
  c.freq_dim = s.freq_dim;
  c.ffn_dim = s.ffn_dim;
  c.num_layers = s.num_layers;
  c.eps = s.eps;
  return c;
}

}  // namespace

std::shared_ptr<const ModelSpec> read_model_spec(std::shared_ptr<const io::ModelDir> dir) {
  auto spec = std::make_shared<ModelSpec>();
  const io::ModelDir& m = *dir;
  if (m.index().s2v) {
    // Wan2.2-S2V: its own config; the blocks' sizes in diffusers' terms for everything that plans by them.
    const auto& s = spec->s2v.emplace(models::WanS2VTransformerConfig::from_json(
        m.component_config("transformer"), m.component_config_path("transformer")));
    spec->experts.push_back(s2v_blocks_config(s));
    spec->audio_encoder.emplace(models::Wav2Vec2Config::from_json(m.component_config("audio_encoder"),
                                                                  m.component_config_path("audio_encoder")));
    spec->audio_encoder->resolve_names(m.checkpoint("audio_encoder"));
    OMNI_CHECK_INPUT(spec->audio_encoder->hidden_size == s.audio_dim &&
                         spec->audio_encoder->num_hidden_layers + 1 == models::kWanS2VAudioLayers,
                     m.component_config_path("audio_encoder"), ": a wav2vec2 of width ",
                     spec->audio_encoder->hidden_size, " and ", spec->audio_encoder->num_hidden_layers,
                     " layers; Wan2.2-S2V's transformer takes ", models::kWanS2VAudioLayers - 1,
                     " layers' states (and the input's) of width ", s.audio_dim);
    spec->audio_processor = io::Wav2Vec2FeatureExtractorConfig::from_json(m.component_config("audio_processor"),
                                                                          m.component_config_path("audio_processor"));
  }
  for (int e = 0; e < 2 && !m.index().s2v; ++e) {
    const char* name = ModelSpec::expert_name(e);
    if (!m.has(name)) continue;
    spec->experts.push_back(
        models::WanTransformerConfig::from_json(m.component_config(name), m.component_config_path(name)));
  }
  OMNI_CHECK_INPUT(!spec->experts.empty(), m.root(), ": no transformer component");
  spec->text_encoder =
      models::Umt5Config::from_json(m.component_config("text_encoder"), m.component_config_path("text_encoder"));
  // Which name the (tied) embedding is stored under decides the module tree: shared.weight and/or
  // encoder.embed_tokens.weight.
  spec->text_encoder.resolve_embedding(m.checkpoint("text_encoder"));
  spec->vae = models::WanVaeConfig::from_json(m.component_config("vae"), m.component_config_path("vae"));
  // VACE: the pipeline and every transformer's config.json agree (model_index.json's classes were checked), and
  // the context fits the VAE: the control video's inactive and reactive latents and its mask, one channel per
  // pixel of a latent cell (WanVACEPipeline.prepare_video_latents and prepare_masks).
  for (int e = 0; e < static_cast<int>(spec->experts.size()); ++e) {
    const auto& c = spec->experts[static_cast<size_t>(e)];
    // Wan2.2-Animate: the transformer's config and the pipeline agree, and its input fits the VAE: the noise,
    // then the reference's and the previous segment's conditioning (4 mask channels and z_dim latent channels).
    OMNI_CHECK_INPUT(c.is_animate() == m.index().animate, m.component_config_path(ModelSpec::expert_name(e)),
                     c.is_animate() ? ": a Wan2.2-Animate transformer (WanAnimateTransformer3DModel) in a pipeline "
                                      "that is not WanAnimatePipeline"
                                    : ": a transformer without Animate's modules in WanAnimatePipeline");
    OMNI_CHECK_INPUT(!c.is_animate() || c.latent_channels == spec->vae.z_dim,
                     m.component_config_path(ModelSpec::expert_name(e)), ": latent_channels ", c.latent_channels,
                     " is not the VAE's z_dim ", spec->vae.z_dim);
    OMNI_CHECK_INPUT(c.is_vace() == m.index().vace, m.component_config_path(ModelSpec::expert_name(e)),
                     c.is_vace()
                         ? ": a VACE transformer (WanVACETransformer3DModel) in a pipeline that is not WanVACEPipeline"
                         : ": a transformer without VACE blocks in WanVACEPipeline");
    if (!c.is_vace()) continue;
    OMNI_CHECK_INPUT(c.vace_layers == spec->experts.front().vace_layers, m.root(),
                     ": the two transformers' vace_layers differ");
    const int64_t sf = spec->vae.scale_factor_spatial, want = 2 * spec->vae.z_dim + sf * sf;
    OMNI_CHECK_INPUT(c.vace_in_channels == want && c.in_channels == spec->vae.z_dim,
                     m.component_config_path(ModelSpec::expert_name(e)), ": vace_in_channels ", c.vace_in_channels,
                     " and in_channels ", c.in_channels, " do not fit the VAE (z_dim ", spec->vae.z_dim, ", factor ",
                     sf, "): VACE takes 2 x z_dim + factor^2 = ", want, " context channels and z_dim input channels");
  }
  // The CLIP image branch: the transformer's embedder and the encoder come together (diffusers' pipeline would
  // pass image states to a transformer that cannot take them, or none to one that needs them).
  const bool branch = spec->experts.front().has_image_branch();
  for (const auto& e : spec->experts)
    OMNI_CHECK_INPUT(e.has_image_branch() == branch, m.root(),
                     ": one transformer has the CLIP image branch "
                     "(image_dim) and the other has not");
  OMNI_CHECK_INPUT(m.has("image_encoder") == branch, m.component_config_path("transformer"),
                   branch ? ": the transformer takes CLIP image states (image_dim is set), but the model has no "
                            "image_encoder (Wan2.1 image models need their CLIP, e.g. the Diffusers repository's "
                            "image_encoder folder)"
                          : ": the model has an image_encoder, but the transformer has no CLIP image branch "
                            "(image_dim is null): nothing would take its output");
  if (branch) {
    OMNI_CHECK_INPUT(m.has("image_processor"), m.root(), ": the model has an image_encoder but no image_processor");
    spec->image_encoder = models::ClipVisionConfig::from_json(m.component_config("image_encoder"),
                                                              m.component_config_path("image_encoder"));
    spec->image_encoder->resolve_names(m.checkpoint("image_encoder"));
    OMNI_CHECK_INPUT(spec->image_encoder->hidden_size == spec->experts.front().image_dim,
                     m.component_config_path("image_encoder"), ": hidden_size ", spec->image_encoder->hidden_size,
                     " is not the transformer's image_dim ", spec->experts.front().image_dim);
    spec->image_processor = io::ClipImageProcessorConfig::from_json(m.component_config("image_processor"),
                                                                    m.component_config_path("image_processor"));
    OMNI_CHECK_INPUT(spec->image_processor->crop_height == spec->image_encoder->image_size &&
                         spec->image_processor->crop_width == spec->image_encoder->image_size,
                     m.component_config_path("image_processor"), ": crop_size ", spec->image_processor->crop_width, "x",
                     spec->image_processor->crop_height, " is not the image encoder's image_size ",
                     spec->image_encoder->image_size);
  }
  spec->scheduler_source = m.component_config_path("scheduler");
  spec->scheduler = m.component_config("scheduler");
  if (spec->scheduler.is_object() && spec->scheduler.contains("flow_shift") &&
      spec->scheduler["flow_shift"].is_number())
    spec->scheduler_flow_shift = spec->scheduler["flow_shift"].get<double>();
  spec->dir = std::move(dir);
  return spec;
}

}  // namespace omni::pipeline
