#include "io/model_dir.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "core/docs_links.h"
#include "core/error.h"
#include "core/files.h"
#include "io/json_file.h"

namespace omni::io {

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string home_dir() {
  std::string home = env("HOME");
  if (!home.empty()) return home;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/";
}

// ORG/NAME: two non-empty parts of repository-id characters (what the hub allows: letters, digits, - _ .).
bool looks_like_repo_id(const std::string& s) {
  const auto slash = s.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == s.size()) return false;
  if (s.find('/', slash + 1) != std::string::npos) return false;
  if (s[0] == '.') return false;
  for (char c : s) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
    if (!ok) return false;
  }
  return true;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

// Classes we can run, per component. image_encoder / image_processor: Wan2.1's image models' CLIP.
const std::map<std::string, std::vector<std::string>>& supported_classes() {
  static const std::map<std::string, std::vector<std::string>> m = {
      {"text_encoder", {"UMT5EncoderModel"}},
      {"tokenizer", {"T5Tokenizer", "T5TokenizerFast"}},
      {"transformer", {"WanTransformer3DModel", "WanVACETransformer3DModel", "WanAnimateTransformer3DModel"}},
      {"transformer_2", {"WanTransformer3DModel", "WanVACETransformer3DModel"}},
      {"vae", {"AutoencoderKLWan"}},
      {"scheduler", {"UniPCMultistepScheduler", "FlowMatchEulerDiscreteScheduler"}},
      {"image_encoder", {"CLIPVisionModel", "CLIPVisionModelWithProjection"}},
      {"image_processor", {"CLIPImageProcessor"}},
  };
  return m;
}

std::string join_list(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

ModelIndex parse_model_index(const nlohmann::json& j, const std::string& path) {
  ConfigFile file(j, path, "WanPipeline");
  ModelIndex mi;
  const nlohmann::json* cls = file.find("_class_name");
  OMNI_CHECK_INPUT(cls != nullptr && cls->is_string(), path, ": missing string \"_class_name\" (the pipeline class)");
  mi.class_name = cls->get<std::string>();
  OMNI_CHECK_INPUT(mi.class_name == "WanPipeline" || mi.class_name == "WanImageToVideoPipeline" ||
                       mi.class_name == "WanVACEPipeline" || mi.class_name == "WanAnimatePipeline",
                   path, ": unsupported pipeline class '", mi.class_name,
                   "' (supported: WanPipeline, WanImageToVideoPipeline, WanVACEPipeline, WanAnimatePipeline)");
  mi.image_to_video = mi.class_name == "WanImageToVideoPipeline";
  mi.vace = mi.class_name == "WanVACEPipeline";
  mi.animate = mi.class_name == "WanAnimatePipeline";

  if (const nlohmann::json* br = file.find("boundary_ratio")) {
    OMNI_CHECK_INPUT(br->is_number(), path, ": \"boundary_ratio\" must be a number or null, found ", br->dump());
    const double r = br->get<double>();
    OMNI_CHECK_INPUT(r >= 0.0 && r <= 1.0, path, ": \"boundary_ratio\" must be in [0, 1], found ", r);
    mi.boundary_ratio = r;
  }
  mi.expand_timesteps = file.bool_or("expand_timesteps", false);

  // Components are [library, class] pairs. One the Wan pipelines do not take is ignored with the other unknown
  // keys, as diffusers' from_pretrained ignores keyword arguments the pipeline does not expect.
  const auto& supported = supported_classes();
  for (const auto& [key, names] : supported) {
    const nlohmann::json* v = file.value(key);
    if (v == nullptr) continue;
    OMNI_CHECK_INPUT(v->is_array() && v->size() == 2, path, ": component '", key, "' must be [library, class], found ",
                     v->dump());
    if ((*v)[0].is_null() && (*v)[1].is_null()) continue;  // optional component left out
    OMNI_CHECK_INPUT((*v)[0].is_string() && (*v)[1].is_string(), path, ": component '", key,
                     "' must be [library, class] strings, found ", v->dump());
    ComponentSpec spec{(*v)[0].get<std::string>(), (*v)[1].get<std::string>()};
    bool ok = false;
    for (const auto& c : names) ok = ok || c == spec.class_name;
    OMNI_CHECK_INPUT(
        ok, path, ": component '", key, "' has unsupported class '", spec.class_name, "'",
        names.empty() ? std::string(" (this component is not supported)") : " (supported: " + join_list(names) + ")");
    mi.components[key] = spec;
  }
  for (const char* required : {"text_encoder", "tokenizer", "transformer", "vae", "scheduler"})
    OMNI_CHECK_INPUT(mi.has(required), path, ": required component '", required, "' is missing or null");
  // WanVACEPipeline runs VACE transformers only, the other pipelines none (diffusers would fail on the first call).
  for (const char* t : {"transformer", "transformer_2"}) {
    if (!mi.has(t)) continue;
    const bool vace = mi.components.at(t).class_name == "WanVACETransformer3DModel";
    OMNI_CHECK_INPUT(vace == mi.vace, path, ": component '", t, "' is ", mi.components.at(t).class_name,
                     " but the pipeline is ", mi.class_name,
                     mi.vace ? " (it takes WanVACETransformer3DModel)" : " (VACE transformers run in WanVACEPipeline)");
    const bool animate = mi.components.at(t).class_name == "WanAnimateTransformer3DModel";
    OMNI_CHECK_INPUT(
        animate == mi.animate, path, ": component '", t, "' is ", mi.components.at(t).class_name,
        " but the pipeline is ", mi.class_name,
        mi.animate ? " (it takes WanAnimateTransformer3DModel)" : " (Animate transformers run in WanAnimatePipeline)");
  }
  // Wan2.2-Animate has one transformer.
  OMNI_CHECK_INPUT(!mi.animate || !mi.has("transformer_2"), path,
                   ": WanAnimatePipeline takes one transformer; component 'transformer_2' is set");
  // diffusers switches to transformer_2 below the boundary; a boundary without it cannot run.
  OMNI_CHECK_INPUT(!mi.boundary_ratio || mi.has("transformer_2"), path, ": \"boundary_ratio\" is ",
                   mi.boundary_ratio.value_or(0.0), " but component 'transformer_2' is absent");
  file.warn_unknown();
  return mi;
}

ModelIndex read_model_index(const std::string& path) {
  return parse_model_index(read_json(path), path);
}

std::string hf_hub_cache_dir() {
  const std::string hub = env("HF_HUB_CACHE");
  if (!hub.empty()) return hub;
  const std::string hf_home = env("HF_HOME");
  if (!hf_home.empty()) return join_path(hf_home, "hub");
  return join_path(home_dir(), ".cache/huggingface/hub");
}

std::string resolve_model_path(const std::string& model) {
  OMNI_CHECK_USAGE(!model.empty(), "--model is empty; give a diffusers pipeline folder or an ORG/NAME model id");
  std::vector<std::string> looked;  // every place looked at, for the error message
  if (is_dir(model)) {
    const std::string index = join_path(model, "model_index.json");
    OMNI_CHECK_INPUT(is_file(index) || is_original_layout(model), "--model ", model,
                     ": the folder is neither a diffusers pipeline folder (no model_index.json; e.g. a download of "
                     "Wan-AI/Wan2.2-T2V-A14B-Diffusers) nor a Wan2.2 original one (no config.json of a WanModel at its "
                     "root or in high_noise_model/; e.g. a download of Wan-AI/Wan2.2-T2V-A14B)");
    return model;
  }
  struct stat st {};
  looked.push_back(
      model + (::stat(model.c_str(), &st) == 0 ? " (local path: not a folder)" : " (local folder: does not exist)"));

  if (looks_like_repo_id(model)) {
    const std::string cache = hf_hub_cache_dir();
    const std::string org = model.substr(0, model.find('/'));
    const std::string name = model.substr(model.find('/') + 1);
    const std::string repo_dir = join_path(cache, "models--" + org + "--" + name);
    const std::string ref_file = join_path(repo_dir, "refs/main");
    const std::string how = !env("HF_HUB_CACHE").empty() ? "$HF_HUB_CACHE"
                            : !env("HF_HOME").empty()    ? "$HF_HOME/hub"
                                                         : "~/.cache/huggingface/hub";
    if (!is_dir(repo_dir)) {
      looked.push_back(repo_dir + " (Hugging Face cache from " + how + ": not downloaded)");
    } else if (!is_file(ref_file)) {
      looked.push_back(ref_file + " (Hugging Face cache from " + how + ": no main revision recorded)");
    } else {
      std::ifstream in(ref_file);
      std::string revision;
      std::getline(in, revision);
      revision = trim(revision);
      const std::string snapshot = join_path(repo_dir, "snapshots/" + revision);
      if (revision.empty() || !is_dir(snapshot)) {
        looked.push_back(snapshot + " (snapshot named by " + ref_file + ": missing)");
      } else {
        // A diffusers repository (model_index.json) or one of Wan-AI's original ones (Wan2.2-T2V-A14B, ...).
        const std::string index = join_path(snapshot, "model_index.json");
        OMNI_CHECK_INPUT(is_file(index) || is_original_layout(snapshot), "--model ", model, ": cached snapshot ",
                         snapshot,
                         " has neither a model_index.json (diffusers) nor a WanModel config.json (Wan2.2 original "
                         "layout): incomplete download? re-run huggingface-cli download ",
                         model);
        return snapshot;
      }
    }
  } else {
    looked.push_back("(not an ORG/NAME model id, so the Hugging Face cache was not searched)");
  }
  std::string where;
  for (const auto& l : looked) where += "\n  " + l;
  OMNI_FAIL_INPUT("--model ", model, ": model not found. Looked at:", where,
                  "\nDownload it first (e.g. huggingface-cli download ", model,
                  ") or give the path of a diffusers pipeline folder; nothing is fetched from the network (",
                  docs::kModelNotFound, ")");
}

ModelDir ModelDir::open(const std::string& model, const ComponentFiles& files) {
  ModelDir m;
  if (!model.empty()) {
    const std::string path = resolve_model_path(model);
    if (is_file(join_path(path, "model_index.json"))) {
      m = ModelDir(path);
    } else {
      m.root_ = path;
      while (m.root_.size() > 1 && m.root_.back() == '/') m.root_.pop_back();
      m.layout_ = "original";
      m.components_ = original_layout_components(m.root_);
    }
  } else {
    OMNI_CHECK_USAGE(!files.empty(),
                     "no model: give --model, or the component files (--transformer, --text-encoder, "
                     "--vae, --tokenizer)");
    m.layout_ = "files";
    m.root_ = files.paths.count("transformer") ? files.paths.at("transformer") : files.paths.begin()->second;
    // Every part named before any file is read: a missing one is the first thing to say.
    for (const char* required : {"transformer", "text_encoder", "vae", "tokenizer"}) {
      const bool carried = required == std::string("tokenizer") && files.paths.count("text_encoder") &&
                           tokenizer_carried_by(files.paths.at("text_encoder"));
      OMNI_CHECK_INPUT(files.paths.count(required) || carried,
                       "no --model: the model is the component files, and there is no ", required, " (give ",
                       component_flag(required),
                       required == std::string("tokenizer") ? " DIR, the google/umt5-xxl folder" : " FILE", ")");
    }
  }
  for (const auto& [name, path] : files.paths) {
    OMNI_CHECK_INPUT(m.layout_ != "diffusers" || name != "audio_encoder", "--audio-encoder ", path,
                     ": only Wan2.2-S2V takes an audio encoder; ", m.root_, "/model_index.json names ",
                     m.index_.class_name);
    // A file replacing a folder's component keeps the folder's config: the file replaces the weights, whose
    // sizes the strict loader holds to it tensor by tensor.
    auto it = m.components_.find(name);
    const bool replaces = it != m.components_.end() && name != "tokenizer";
    // An original folder's index is made after this loop: its component's config is the one read with it.
    const bool from_index = m.layout_ == "diffusers";
    nlohmann::json config;
    std::string source;
    if (replaces && from_index) {
      config = m.component_config(name);
      source = m.component_config_path(name);
    } else if (replaces && it->second.config) {
      config = *it->second.config;
      source = it->second.config_source;
    }
    const bool with_config = replaces && (from_index || it->second.config.has_value());
    m.components_[name] =
        component_from_file(name, path, component_flag(name), with_config ? &config : nullptr, source);
    if (m.layout_ == "diffusers" && !m.index_.has(name)) {
      OMNI_FAIL_INPUT(component_flag(name), " ", path, ": ", m.root_, "/model_index.json has no ", name, " to replace");
    }
  }
  if (m.layout_ != "diffusers") m.set_index_from_components(m.root_);
  return m;
}

void ModelDir::set_index_from_components(const std::string& source) {
  if (!components_.count("tokenizer") && components_.count("text_encoder")) {
    if (auto carried = tokenizer_carried_by(components_.at("text_encoder").checkpoint))
      components_["tokenizer"] = *carried;
  }
  for (const char* required : {"transformer", "text_encoder", "vae", "tokenizer"}) {
    OMNI_CHECK_INPUT(components_.count(required), source, ": no ", required, " (give ", component_flag(required),
                     required == std::string("tokenizer") ? " DIR, the google/umt5-xxl folder" : " FILE", ")");
  }
  const nlohmann::json& tc = *components_.at("transformer").config;
  const bool two = components_.count("transformer_2") != 0;
  const bool vace = tc.value("_class_name", "") == "WanVACETransformer3DModel";
  const bool animate = tc.value("_class_name", "") == "WanAnimateTransformer3DModel";
  const bool s2v = tc.value("_class_name", "") == "WanModel_S2V";
  // WanModel_S2V's config.json states in_dim (Wan's name), the others diffusers' in_channels.
  const int64_t in_channels = tc.at(s2v ? "in_dim" : "in_channels").get<int64_t>();
  const auto d = original_defaults(in_channels, two, components_.at("transformer").origin, vace, animate, s2v);
  if (s2v) {
    OMNI_CHECK_INPUT(components_.count("audio_encoder"), source,
                     layout_ == "original" ? ": a Wan2.2-S2V folder without wav2vec2-large-xlsr-53-english/"
                                           : ": Wan2.2-S2V's transformer without its wav2vec2",
                     " and no --audio-encoder: give --audio-encoder FILE (ComfyUI's "
                     "wav2vec2_large_english_fp16.safetensors) or DIR (a transformers wav2vec2 folder)");
    // The feature extractor's settings: the original folder's, else those beside the encoder, else the defaults.
    if (!components_.count("audio_processor"))
      components_["audio_processor"] = audio_processor_of(components_.at("audio_encoder").dir);
  } else {
    OMNI_CHECK_INPUT(!components_.count("audio_encoder"), "--audio-encoder ",
                     components_.count("audio_encoder") ? components_.at("audio_encoder").checkpoint : "",
                     ": only Wan2.2-S2V takes an audio encoder; this model's transformer is not Wan2.2-S2V's (",
                     components_.at("transformer").origin, ")");
  }
  index_ = ModelIndex();
  index_source_ =
      "Wan2.2's configs (wan/configs), from the transformer's " + std::to_string(in_channels) + " input channels";
  index_.class_name = d.pipeline_class;
  index_.image_to_video = d.pipeline_class == "WanImageToVideoPipeline";
  index_.vace = d.pipeline_class == "WanVACEPipeline";
  index_.animate = d.pipeline_class == "WanAnimatePipeline";
  index_.s2v = d.pipeline_class == "WanS2VPipeline";
  index_.expand_timesteps = d.expand_timesteps;
  index_.boundary_ratio = d.boundary_ratio;
  ModelComponent scheduler;
  scheduler.config = unipc_scheduler_config(d.sample_shift);
  std::ostringstream shift;
  shift << d.sample_shift;
  scheduler.config_source = "Wan2.2's configs (wan/configs: UniPC, sample_shift " + shift.str() + ")";
  if (d.shift_from_preset) {
    scheduler.config->erase("flow_shift");
    scheduler.config_source = "Wan's configs (UniPC; the shift from the model's preset)";
  }
  // Wan2.1's image models: CLIPImageProcessor's defaults, which are the Wan2.1 Diffusers repositories' settings.
  if (components_.count("image_encoder") && !components_.count("image_processor")) {
    ModelComponent processor;
    // An empty config: io::ClipImageProcessorConfig's defaults, which are CLIPImageProcessor's.
    processor.config = nlohmann::json::object();
    processor.config_source = "CLIPImageProcessor's defaults (the Wan2.1 Diffusers repositories' image_processor)";
    processor.origin = processor.config_source;
    components_["image_processor"] = processor;
  }
  scheduler.origin = scheduler.config_source;
  components_["scheduler"] = scheduler;
  for (const auto& kv : components_) index_.components[kv.first] = ComponentSpec{"omni", kv.first};
}

ModelDir::ModelDir(const std::string& root) : root_(root) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  index_source_ = join_path(root_, "model_index.json");
  index_ = read_model_index(index_source_);
  for (const auto& kv : index_.components) {
    const std::string& name = kv.first;
    ModelComponent c;
    c.checkpoint = join_path(root_, name);
    c.dir = join_path(root_, name);
    c.config_source = name == "scheduler"         ? join_path(c.dir, "scheduler_config.json")
                      : name == "tokenizer"       ? join_path(c.dir, "tokenizer_config.json")
                      : name == "image_processor" ? join_path(c.dir, "preprocessor_config.json")
                                                  : join_path(c.dir, "config.json");
    c.origin = "folder " + c.dir + " (diffusers)";
    components_[name] = c;
  }
}

const ModelComponent& ModelDir::component(const std::string& name) const {
  auto it = components_.find(name);
  OMNI_CHECK_INPUT(it != components_.end() && index_.has(name),
                   layout_ == "diffusers" ? join_path(root_, "model_index.json") : root_,
                   ": the model has no component '", name, "'");
  return it->second;
}

std::string ModelDir::component_dir(const std::string& name) const {
  const ModelComponent& c = component(name);
  OMNI_CHECK_INPUT(!c.dir.empty(), c.checkpoint, ": component '", name, "' is a single file, not a folder");
  OMNI_CHECK_INPUT(is_dir(c.dir), c.dir, ": component folder '", name,
                   "' listed in model_index.json does not exist (incomplete download?)");
  return c.dir;
}

std::string ModelDir::component_config_path(const std::string& name) const {
  const ModelComponent& c = component(name);
  if (!c.config && !c.dir.empty()) component_dir(name);  // a folder's config: say so when the folder is missing
  return c.config_source;
}

const nlohmann::json& ModelDir::component_config(const std::string& name) const {
  const ModelComponent& c = component(name);
  if (c.config) return *c.config;
  if (auto it = configs_.find(name); it != configs_.end()) return it->second;
  if (!c.dir.empty()) component_dir(name);
  return configs_[name] = read_json(c.config_source);
}

const Checkpoint& ModelDir::checkpoint(const std::string& name) const {
  const ModelComponent& c = component(name);
  if (c.opened) return *c.opened;
  if (auto it = checkpoints_.find(name); it != checkpoints_.end()) return *it->second;
  if (c.checkpoint == c.dir) component_dir(name);  // a diffusers folder: say so when it is missing
  const auto map = c.name_map(name);
  auto opened = std::make_shared<const Checkpoint>(Checkpoint::open(c.checkpoint, map ? &*map : nullptr));
  return *(checkpoints_[name] = std::move(opened));
}

std::string ModelDir::origin(const std::string& name) const {
  return component(name).origin;
}

}  // namespace omni::io
