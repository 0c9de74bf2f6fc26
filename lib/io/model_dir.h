// The --model argument: a local diffusers pipeline folder or an ORG/NAME repository id found (offline) in the
// Hugging Face cache, and its model_index.json (which pipeline, which components, the MoE boundary).
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/foreign_model.h"

namespace omni::io {

// One entry of model_index.json: "vae": ["diffusers", "AutoencoderKLWan"].
struct ComponentSpec {
  std::string library;
  std::string class_name;
};

struct ModelIndex {
  std::string class_name;       // "WanPipeline", "WanImageToVideoPipeline", "WanVACEPipeline", "WanAnimatePipeline"
  bool image_to_video = false;  // class_name == WanImageToVideoPipeline
  bool vace = false;            // class_name == WanVACEPipeline (its transformers WanVACETransformer3DModel)
  bool animate = false;         // class_name == WanAnimatePipeline (Wan2.2-Animate: WanAnimateTransformer3DModel)
  // class_name == WanS2VPipeline (Wan2.2-S2V-14B's original folder: WanModel_S2V and a wav2vec2 audio_encoder;
  // diffusers has no S2V pipeline, so no model_index.json names it)
  bool s2v = false;
  // Fraction of the training timesteps above which `transformer` runs and below which `transformer_2` runs
  // (Wan2.2 A14B); absent for single-transformer models.
  std::optional<double> boundary_ratio;
  // Wan2.2 TI2V-5B: per-token timesteps (the conditioning frame gets timestep 0).
  bool expand_timesteps = false;
  // The components present; [null, null] entries are left out.
  std::map<std::string, ComponentSpec> components;

  bool has(const std::string& component) const { return components.count(component) != 0; }
};

// Validates the parsed model_index.json: supported pipeline class, known components with supported classes,
// the required components present, boundary_ratio in [0, 1] and only with transformer_2. Input errors name
// `path`, the key and what was found.
ModelIndex parse_model_index(const nlohmann::json& j, const std::string& path);
ModelIndex read_model_index(const std::string& path);

// The Hugging Face hub cache folder: $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

// Resolves --model to a pipeline folder holding model_index.json: an existing local folder, or ORG/NAME looked
// up offline as <cache>/models--ORG--NAME/snapshots/<refs/main>. A model not found is an input error listing
// every place looked at.
std::string resolve_model_path(const std::string& model);

// A model: a diffusers pipeline folder, a Wan2.2 original-layout folder (io/foreign_model.h), or single component
// files (--transformer, --vae, ...) standing alone or replacing parts of either folder. Each component is read
// from one place, with its config (read from the folder, or inferred) and the names its tensors carry.
class ModelDir {
 public:
  // `model` as given to --model (see resolve_model_path; "" when only component files are given); `files` the
  // single components named by their flags.
  static ModelDir open(const std::string& model, const ComponentFiles& files = {});
  // `root`: a pipeline folder holding model_index.json.
  explicit ModelDir(const std::string& root);

  // The --model folder, or (without one) the first component file's path.
  const std::string& root() const { return root_; }
  const ModelIndex& index() const { return index_; }
  // Where the index comes from: <root>/model_index.json, or Wan2.2's own configs for the other layouts.
  const std::string& index_source() const { return index_source_; }
  bool has(const std::string& component) const { return index_.has(component); }
  // <root>/<component> of a diffusers folder, or the tokenizer's folder; input error if the model lacks it or
  // (diffusers) the folder does not exist, or when the component is a single file.
  std::string component_dir(const std::string& component) const;
  // The component's config: its path (scheduler/scheduler_config.json, tokenizer/tokenizer_config.json, else
  // <component>/config.json), or a description of what it was inferred from (for messages).
  std::string component_config_path(const std::string& component) const;
  // Read (or inferred) once per ModelDir: later calls return the same object.
  const nlohmann::json& component_config(const std::string& component) const;
  // The component's weights, their names mapped to ours: opened once per ModelDir (the tensor headers, a .pth's
  // pickle), shared by the memory planner and the loaders.
  const Checkpoint& checkpoint(const std::string& component) const;
  // Everything known of a component (the loaders' view: file, names, config).
  const ModelComponent& component(const std::string& component) const;
  // Where the component comes from, for --dry-run.
  std::string origin(const std::string& component) const;
  // "diffusers", "original" (Wan2.2's layout) or "files" (single files only).
  const std::string& layout() const { return layout_; }

 private:
  ModelDir() = default;
  void set_index_from_components(const std::string& source);

  std::string root_;
  std::string layout_ = "diffusers";
  ModelIndex index_;
  std::string index_source_;
  std::map<std::string, ModelComponent> components_;
  // What was read once, by component (filled when first asked: a dry run opens no weight file it does not plan).
  mutable std::map<std::string, nlohmann::json> configs_;
  mutable std::map<std::string, std::shared_ptr<const Checkpoint>> checkpoints_;
};

}  // namespace omni::io
