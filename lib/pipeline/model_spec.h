// One model as everything above io/ sees it, read once per rank: the pipeline class, every component's config
// parsed into its typed struct, and where each component's files are (io::ModelDir, which opens each config and
// each checkpoint's tensor headers once and hands the same objects to every later reader). The layout choice,
// the memory planner, the dry-run listing, the input checks and the pipeline all take this; none of them reopens
// a config or re-reads a header.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/clip_image_processor.h"
#include "io/model_dir.h"
#include "io/wav2vec2_feature_extractor.h"
#include "models/autoencoder_kl_wan.h"
#include "models/clip_vision_model.h"
#include "models/umt5_encoder.h"
#include "models/wan_s2v_transformer_config.h"
#include "models/wan_transformer_config.h"
#include "models/wav2vec2_model.h"

namespace omni::pipeline {

struct ModelSpec {
  std::shared_ptr<const io::ModelDir> dir;  // the files (and model_index.json, or what stands for it)
  // The experts in order: transformer, then transformer_2 when the model has two (Wan2.2 A14B).
  std::vector<models::WanTransformerConfig> experts;
  models::Umt5Config text_encoder;  // its embedding's tensor name resolved from the checkpoint
  models::WanVaeConfig vae;
  // Wan2.1's image models: the CLIP image encoder (its names resolved from the checkpoint) and its processor.
  // Present exactly when the transformer has the image branch (read_model_spec checks).
  std::optional<models::ClipVisionConfig> image_encoder;
  std::optional<io::ClipImageProcessorConfig> image_processor;
  // Wan2.2-S2V-14B (index().s2v): its transformer's own config (experts[0] then holds the attention blocks' sizes
  // in diffusers' terms, for the planners), its wav2vec2 and that encoder's feature extractor.
  std::optional<models::WanS2VTransformerConfig> s2v;
  std::optional<models::Wav2Vec2Config> audio_encoder;
  std::optional<io::Wav2Vec2FeatureExtractorConfig> audio_processor;
  // scheduler_config.json (or Wan2.2's own for the other layouts), validated when the sampler is made.
  nlohmann::json scheduler;
  std::string scheduler_source;
  // The checkpoint's own flow shift (scheduler_config.json's flow_shift; absent when it states none).
  std::optional<double> scheduler_flow_shift;

  const io::ModelIndex& index() const { return dir->index(); }
  const std::string& root() const { return dir->root(); }
  // The component names of the experts ("transformer", "transformer_2").
  static const char* expert_name(int expert);
  // Height and width must be multiples of this: the VAE's spatial factor x the transformer's patch size.
  int spatial_multiple() const;
  int temporal_factor() const { return static_cast<int>(vae.scale_factor_temporal); }
  // Whether an expert's checkpoint stores any of its Linear weights in float8 (ComfyUI's fp8_scaled files).
  bool stores_float8(int expert) const;
};

// Parses every component's config of `dir` into its typed struct (input errors name the file and the key).
std::shared_ptr<const ModelSpec> read_model_spec(std::shared_ptr<const io::ModelDir> dir);

}  // namespace omni::pipeline
