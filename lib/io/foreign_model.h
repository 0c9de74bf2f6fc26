// Wan2.2 weights outside a diffusers pipeline folder: Wan-AI's original repositories and single files (ComfyUI's,
// or any one component's), told apart by their files and tensor names. For each component: which file, how its
// names become ours (io/wan_names.h), and the diffusers / transformers config it implies, taken from the
// original config.json where there is one and from the tensor shapes where there is none.
#pragma once

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/safetensors.h"
#include "io/wan_names.h"

namespace omni::io {

// One component of a model, wherever it comes from.
struct ModelComponent {
  std::string checkpoint;   // what Checkpoint::open takes: a folder, a .safetensors[.index.json] or .pth file
  std::string dir;          // the tokenizer's folder
  std::string spiece_file;  // or the file whose `spiece_model` tensor holds the tokenizer (ComfyUI's umt5_xxl)
  NameLayout names = NameLayout::kOurs;
  std::string strip_prefix;              // ComfyUI's model.diffusion_model.
  VaeNameShape vae;                      // for a VAE in original names
  std::optional<nlohmann::json> config;  // the diffusers-form config; absent: read config_source when asked
  std::string config_source;             // the config's path, or what it was inferred from
  std::string origin;                    // where it comes from, for --dry-run: "file X (ComfyUI / original names)"
  // The weights, opened once under our names where telling the layout needed the file open (single files, the
  // original layout); null: ModelDir opens them when first asked.
  std::shared_ptr<const Checkpoint> opened;

  // A NameMap for Checkpoint::open (null when the names are ours already).
  std::optional<NameMap> name_map(const std::string& component) const;
};

// The files a user named for single components: --transformer, --transformer-2, --text-encoder, --vae,
// --image-encoder, --audio-encoder (files or folders) and --tokenizer (a folder).
struct ComponentFiles {
  std::map<std::string, std::string> paths;  // component ("transformer", "transformer_2", ...) -> path, flag-given
  bool empty() const { return paths.empty(); }
};

// The flag that names `component` ("--transformer-2").
std::string component_flag(const std::string& component);
// The components a flag may give as a file or folder (ComponentFiles' keys), each named by component_flag.
const std::vector<std::string>& file_components();

// A weight file or folder of one component read on its own: its name layout is told from its tensor names and
// its config inferred from the tensor shapes (what no config states: a transformer's heads are dim / 128, as in
// every Wan2.2 model). `component`: transformer, transformer_2, text_encoder, vae, image_encoder (transformers',
// Wan's or open_clip's CLIP names) or audio_encoder (Wan2.2-S2V's wav2vec2: a transformers folder or ComfyUI's
// single file). A Wan2.2-S2V transformer file without its config.json is read as Wan2.2-S2V-14B (its published
// settings, its sizes from the shapes). `flag` names it in errors.
// With `config` (the config of the folder component the file replaces; `config_source` its path), that config is
// kept rather than inferred.
ModelComponent component_from_file(const std::string& component, const std::string& path, const std::string& flag,
                                   const nlohmann::json* config = nullptr, const std::string& config_source = "");

// Wan2.2-S2V's audio feature extractor settings: a wav2vec2 folder's preprocessor_config.json, or, where there is
// none (`dir` empty: the encoder is one file), transformers' Wav2Vec2FeatureExtractor defaults, which are the
// published folder's values.
ModelComponent audio_processor_of(const std::string& dir);

// The tokenizer a text-encoder file carries (ComfyUI's umt5_xxl files: a `spiece_model` tensor), if it does.
std::optional<ModelComponent> tokenizer_carried_by(const std::string& text_encoder_path);

// True when `dir` is a Wan2.2 original-layout folder (WanModel config.json at its root, or high_noise_model/ and
// low_noise_model/ with one each).
bool is_original_layout(const std::string& dir);

// The components of an original-layout folder: transformer (high_noise_model/, or the root), transformer_2
// (low_noise_model/), text_encoder (models_t5_*.pth), vae (Wan2.x_VAE.pth), tokenizer (google/umt5-xxl/), and
// image_encoder (models_clip_*.pth: Wan2.1's image models' and Wan2.2-Animate-14B's CLIP) where there is one;
// Wan2.2-S2V-14B's audio_encoder (wav2vec2-large-xlsr-53-english/).
std::map<std::string, ModelComponent> original_layout_components(const std::string& dir);

// The scheduler and pipeline settings Wan2.2's own configs (wan/configs) give a task, told from the transformer's
// input channels (16 text-to-video, 36 image-to-video, 48 TI2V) and whether there are two experts.
struct OriginalDefaults {
  std::string
      pipeline_class;  // WanPipeline, WanImageToVideoPipeline, WanVACEPipeline, WanAnimatePipeline, WanS2VPipeline
  bool expand_timesteps = false;
  std::optional<double> boundary_ratio;
  double sample_shift = 5.0;
  // Wan2.1's one-transformer models: the shift depends on the model and the size (3 for I2V at 480p, 16 for
  // FLF2V), which the channels do not tell: the scheduler states none and the model's preset gives it.
  bool shift_from_preset = false;
};
// `vace`: the transformer has VACE blocks (Wan2.1-VACE: one expert, the preset's shift; Wan2.2-VACE-Fun: T2V-A14B's
// two experts). `animate`: it is Wan2.2-Animate's (its config's _class_name WanAnimateTransformer3DModel: a pose
// patch embedding, motion encoder, face encoder and face adapters): WanAnimatePipeline, UniPC with shift 5. `s2v`:
// Wan2.2-S2V-14B's WanModel_S2V: WanS2VPipeline (ours; diffusers has none), shift 3.
OriginalDefaults original_defaults(int64_t in_channels, bool two_experts, const std::string& source, bool vace = false,
                                   bool animate = false, bool s2v = false);
// diffusers' UniPCMultistepScheduler config for flow matching with `shift` (as the Wan2.2 Diffusers repositories
// ship it).
nlohmann::json unipc_scheduler_config(double shift);

}  // namespace omni::io
