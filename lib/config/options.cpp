#include "config/options.h"

#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "config/help.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/log.h"
#include "core/text.h"
#include "dist/gpu_table.h"
#include "text/utf8.h"

namespace omni::config {

// The library's enums the options map their words onto.
using dist::DeviceRequest;
using dist::ParallelConfig;
using models::Fp8Layers;
using pipeline::StepCacheMode;
using SampleSolver = sched::Solver;

namespace {

using Setter = std::function<void(GenerateOptions&, const std::string& value, const std::string& where)>;
// The resolved value, typed: a string, an integer, a number, a boolean, or null (an optional left unset).
using Getter = std::function<nlohmann::json(const GenerateOptions&)>;

struct Binding {
  OptionSpec spec;
  Setter set;
  Getter get;
  std::string unset_text;  // what --dry-run shows for an empty string or a null ("(model default)")
};

int64_t to_int(const std::string& v, const std::string& where) {
  try {
    size_t used = 0;
    long long x = std::stoll(v, &used);
    if (used == v.size()) return x;
  } catch (const std::exception&) {
  }
  OMNI_FAIL_USAGE(where, ": expected an integer, got '", v, "'");
}

int to_int32(const std::string& v, const std::string& where) {
  int64_t x = to_int(v, where);
  OMNI_CHECK_USAGE(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(), where, ": value ", v,
                   " is out of range");
  return static_cast<int>(x);
}

double to_double(const std::string& v, const std::string& where) {
  try {
    size_t used = 0;
    double x = std::stod(v, &used);
    if (used == v.size() && std::isfinite(x)) return x;
  } catch (const std::exception&) {
  }
  OMNI_FAIL_USAGE(where, ": expected a number, got '", v, "'");
}

bool is_null(const std::string& v) {
  return v == "null" || v == "none" || v == "~" || v.empty();
}

std::optional<double> to_optional_double(const std::string& v, const std::string& where) {
  if (is_null(v)) return std::nullopt;
  return to_double(v, where);
}

bool to_bool(const std::string& v, const std::string& where) {
  std::string s = v;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  OMNI_FAIL_USAGE(where, ": expected true or false, got '", v, "'");
}

// "0.5" or "0.5,1,1.2" (a JSON list's numbers arrive joined by commas).
std::vector<double> to_double_list(const std::string& v, const std::string& where) {
  std::vector<double> out;
  std::stringstream ss(v);
  for (std::string item; std::getline(ss, item, ',');) {
    const size_t b = item.find_first_not_of(" \t[]"), e = item.find_last_not_of(" \t[]");
    OMNI_CHECK_USAGE(b != std::string::npos, where, " must be numbers separated by commas, got '", v, "'");
    out.push_back(to_double(item.substr(b, e - b + 1), where));
  }
  OMNI_CHECK_USAGE(!out.empty(), where, " must be one number or several separated by commas, got '", v, "'");
  return out;
}

std::vector<LoraSpec> to_lora_list(const std::string& v, const std::string& where) {
  std::vector<LoraSpec> out;
  std::stringstream ss(v);
  std::string item;
  while (std::getline(ss, item))
    if (!item.empty()) out.push_back(parse_lora_spec(item, where));
  return out;
}

// Each choice option's one list of values and names: the parser, --help (as the value's type), the error
// messages and name_of() read it.
template <typename E>
using Choices = std::vector<std::pair<E, const char*>>;

const Choices<SampleSolver>& solver_choices() {
  static const Choices<SampleSolver> c = {{SampleSolver::kUniPC, "unipc"}, {SampleSolver::kEuler, "euler"}};
  return c;
}
const Choices<WeightFormat>& weight_format_choices() {
  static const Choices<WeightFormat> c = {{WeightFormat::kRunDtype, "auto"}, {WeightFormat::kFloat8, "float8_e4m3fn"}};
  return c;
}

const Choices<Fp8Layers>& fp8_layer_choices() {
  static const Choices<Fp8Layers> c = {
      {Fp8Layers::kFfn, "ffn"}, {Fp8Layers::kAttention, "attention"}, {Fp8Layers::kAll, "all"}};
  return c;
}

const Choices<StepCacheMode>& step_cache_choices() {
  static const Choices<StepCacheMode> c = {
      {StepCacheMode::kNone, "none"}, {StepCacheMode::kTeaCache, "teacache"}, {StepCacheMode::kFirstBlock, "fbcache"}};
  return c;
}
const Choices<LayoutMode>& layout_choices() {
  static const Choices<LayoutMode> c = {{LayoutMode::kAuto, "auto"}, {LayoutMode::kManual, "manual"}};
  return c;
}
const Choices<TaskChoice>& task_choices() {
  static const Choices<TaskChoice> c = {{TaskChoice::kAuto, "auto"}, {TaskChoice::kT2V, "t2v"},
                                        {TaskChoice::kI2V, "i2v"},   {TaskChoice::kTI2V, "ti2v"},
                                        {TaskChoice::kVace, "vace"}, {TaskChoice::kAnimate, "animate"},
                                        {TaskChoice::kS2V, "s2v"}};
  return c;
}

const Choices<AnimateMode>& animate_mode_choices() {
  static const Choices<AnimateMode> c = {{AnimateMode::kAnimate, "animate"}, {AnimateMode::kReplace, "replace"}};
  return c;
}
// The names are core's (dtype_name: what diffusers' configs write as torch_dtype).
const Choices<c10::ScalarType>& dtype_choices() {
  static const Choices<c10::ScalarType> c = [] {
    Choices<c10::ScalarType> out;
    for (auto t : {c10::ScalarType::Float, c10::ScalarType::BFloat16, c10::ScalarType::Half})
      out.emplace_back(t, dtype_name(t));
    return out;
  }();
  return c;
}
const Choices<log::Level>& log_level_choices() {
  static const Choices<log::Level> c = {{log::Level::kDebug, "debug"}, {log::Level::kInfo, "info"},
                                        {log::Level::kWarn, "warn"},   {log::Level::kWarn, "warning"},
                                        {log::Level::kError, "error"}, {log::Level::kOff, "off"}};
  return c;
}

// "unipc or euler", "auto, t2v, i2v or ti2v".
template <typename E>
std::string alternatives(const Choices<E>& choices) {
  std::string out;
  for (size_t i = 0; i < choices.size(); ++i)
    out += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + std::string(choices[i].second);
  return out;
}

template <typename E>
E parse_choice(const Choices<E>& choices, const std::string& v, const std::string& where) {
  for (const auto& [value, name] : choices)
    if (v == name) return value;
  OMNI_FAIL_USAGE(where, " must be ", alternatives(choices), ", got '", v, "'");
}

template <typename E>
const char* choice_name(const Choices<E>& choices, E value) {
  for (const auto& [v, name] : choices)
    if (v == value) return name;
  OMNI_FAIL("an option value outside its list of choices");
}

// What --dry-run shows for a component file not given: the component of --model. Marks those options.
const char* const kFromModel = "(from --model)";

// The table every layer shares. Defaults here are the built-in layer; presets override them per model.
const std::vector<Binding>& bindings() {
  static const std::vector<Binding> table = [] {
    std::vector<Binding> t;
    // One helper per field type: each binds the parser (set) and the typed getter (get) to one field.
    auto str = [&](const char* name, const char* help, const char* def, std::string GenerateOptions::*field,
                   const char* unset = "", const char* type = "TEXT") {
      t.push_back({{name, help, def, false, type},
                   [field](GenerateOptions& o, const std::string& v, const std::string&) { o.*field = v; },
                   [field](const GenerateOptions& o) { return nlohmann::json(o.*field); },
                   unset});
    };
    auto i32 = [&](const char* name, const char* help, const char* def, int GenerateOptions::*field) {
      t.push_back(
          {{name, help, def, false, "INT"},
           [field](GenerateOptions& o, const std::string& v, const std::string& w) { o.*field = to_int32(v, w); },
           [field](const GenerateOptions& o) { return nlohmann::json(o.*field); },
           ""});
    };
    auto f64 = [&](const char* name, const char* help, const char* def, double GenerateOptions::*field) {
      t.push_back(
          {{name, help, def, false, "FLOAT"},
           [field](GenerateOptions& o, const std::string& v, const std::string& w) { o.*field = to_double(v, w); },
           [field](const GenerateOptions& o) { return nlohmann::json(o.*field); },
           ""});
    };
    auto opt_f64 = [&](const char* name, const char* help, const char* def,
                       std::optional<double> GenerateOptions::*field, const char* unset) {
      t.push_back({{name, help, def, false, "FLOAT"},
                   [field](GenerateOptions& o, const std::string& v, const std::string& w) {
                     o.*field = to_optional_double(v, w);
                   },
                   [field](const GenerateOptions& o) {
                     return (o.*field) ? nlohmann::json(*(o.*field)) : nlohmann::json(nullptr);
                   },
                   unset});
    };
    auto flag = [&](const char* name, const char* help, bool GenerateOptions::*field) {
      t.push_back(
          {{name, help, "false", true},
           [field](GenerateOptions& o, const std::string& v, const std::string& w) { o.*field = to_bool(v, w); },
           [field](const GenerateOptions& o) { return nlohmann::json(o.*field); },
           ""});
    };
    auto par = [&](const char* name, const char* help, const char* def, int ParallelConfig::*field) {
      t.push_back({{name, help, def, false, "INT"},
                   [field](GenerateOptions& o, const std::string& v, const std::string& w) {
                     o.parallel.*field = to_int32(v, w);
                   },
                   [field](const GenerateOptions& o) { return nlohmann::json(o.parallel.*field); },
                   ""});
    };
    // One of a list (Choices): the names joined by | are the value's type in --help.
    auto choice = [&](const char* name, const char* help, const char* def, auto field, const auto& choices) {
      std::string type;
      for (const auto& c : choices) type += (type.empty() ? "" : "|") + std::string(c.second);
      t.push_back(
          {{name, help, def, false, type},
           [field, &choices](GenerateOptions& o, const std::string& v, const std::string& w) {
             o.*field = parse_choice(choices, v, w);
           },
           [field, &choices](const GenerateOptions& o) { return nlohmann::json(choice_name(choices, o.*field)); },
           ""});
    };
    auto lora_list = [&](const char* name, const char* help, std::vector<LoraSpec> GenerateOptions::*field) {
      OptionSpec spec{name, help, "", false, "FILE[:SCALE]"};
      spec.is_list = true;
      t.push_back(
          {spec,
           [field](GenerateOptions& o, const std::string& v, const std::string& w) { o.*field = to_lora_list(v, w); },
           [field](const GenerateOptions& o) {
             nlohmann::json list = nlohmann::json::array();
             for (const auto& l : o.*field) list.push_back({{"path", l.path}, {"scale", l.scale}});
             return list;
           },
           "(none)"});
    };
    // Repeatable files (--reference-image a --reference-image b), in order.
    auto file_list = [&](const char* name, const char* help, std::vector<std::string> GenerateOptions::*field) {
      OptionSpec spec{name, help, "", false, "FILE"};
      spec.is_list = true;
      t.push_back({spec,
                   [field](GenerateOptions& o, const std::string& v, const std::string&) {
                     (o.*field).clear();
                     std::stringstream ss(v);
                     for (std::string item; std::getline(ss, item);)
                       if (!item.empty()) (o.*field).push_back(item);
                   },
                   [field](const GenerateOptions& o) { return nlohmann::json(o.*field); }, "(none)"});
    };
    using G = GenerateOptions;
    str("model",
        "diffusers-layout model folder, or ORG/NAME in the Hugging Face cache (offline); empty: the "
        "built-in default model (random weights, for trying the tool)",
        "", &G::model, "(built-in default model)");
    str("transformer",
        "transformer weights (A14B: the high-noise expert): a .safetensors file (diffusers, Wan2.2 or ComfyUI names; "
        "fp16, bf16, fp8_scaled) or folder; replaces --model's or stands without it",
        "", &G::transformer_file, kFromModel);
    str("transformer-2", "the low-noise expert's weights (A14B), as --transformer", "", &G::transformer_2_file,
        kFromModel);
    str("text-encoder",
        "UMT5 text encoder weights: Wan2.2's models_t5_umt5-xxl-enc-bf16.pth, ComfyUI's umt5_xxl_*.safetensors or a "
        "diffusers text_encoder folder",
        "", &G::text_encoder_file, kFromModel);
    str("vae",
        "VAE weights: Wan2.1_VAE.pth / Wan2.2_VAE.pth, ComfyUI's wan_2.1_vae / wan2.2_vae .safetensors or a "
        "diffusers vae folder",
        "", &G::vae_file, kFromModel);
    str("tokenizer", "the tokenizer's folder (google/umt5-xxl: tokenizer.json or spiece.model)", "", &G::tokenizer_dir,
        kFromModel);
    str("image-encoder",
        "Wan2.1 image models' CLIP image encoder: ComfyUI's clip_vision_h.safetensors, Wan's "
        "models_clip_*.pth, open_clip's .bin or a diffusers image_encoder folder",
        "", &G::image_encoder_file, kFromModel);
    str("audio-encoder",
        "Wan2.2-S2V's wav2vec2 audio encoder: ComfyUI's wav2vec2_large_english_fp16.safetensors or a transformers "
        "folder (wav2vec2-large-xlsr-53-english/)",
        "", &G::audio_encoder_file, kFromModel);
    choice("task", "auto: from model_index.json and --image; or t2v, i2v, ti2v, vace, animate, s2v", "auto", &G::task,
           task_choices());
    str("config", "YAML file of options (same names as the flags, without dashes)", "", &G::config_file);
    str("prompt", "text prompt", "", &G::prompt);
    str("negative-prompt", "negative prompt (default: the model preset's)", "", &G::negative_prompt);
    str("prompts-file",
        "videos to make, spread over data-parallel groups: a text file (one prompt per line) or .jsonl (one JSON "
        "object per line: prompt, negative_prompt, seed, image, output, num_frames, ...); videos already written "
        "are skipped (resume), unless --overwrite",
        "", &G::prompts_file);
    str("image", "conditioning image for image-to-video (PNG, JPEG, ...)", "", &G::image);
    str("last-image",
        "the video's last frame, with --image its first (first-last-frame video, as diffusers' "
        "WanImageToVideoPipeline last_image; I2V models)",
        "", &G::last_image);
    str("video",
        "video-to-video: the clip to start from (MP4, MOV, MKV, WebM, GIF, ...; its first --num-frames frames), "
        "as diffusers' WanVideoToVideoPipeline; T2V and TI2V-5B models",
        "", &G::video);
    f64("strength",
        "with --video: how much of the clip is remade, in (0, 1]; the last int(steps x strength) of the "
        "--num-inference-steps steps run, from the clip noised to the first of them",
        "0.8", &G::strength);
    str("control-video",
        "VACE models: the control video (depth, pose, edges, a clip to inpaint or extend; its first --num-frames "
        "frames at the video's size), diffusers' WanVACEPipeline video; default: a grey clip",
        "", &G::control_video);
    str("mask-video",
        "VACE models, with --control-video: the mask video, white where the video is generated and black where the "
        "control video is kept (grey-scale; its first --num-frames frames); default: all white",
        "", &G::mask_video);
    file_list("reference-image",
              "VACE models: a reference image (a subject, a style), padded onto a white canvas of the video's "
              "size and denoised as a frame before the video; repeatable",
              &G::reference_images);
    t.push_back({{"conditioning-scale",
                  "VACE models: the weight of the control signal, one value or one per VACE layer (X,Y,...)", "1",
                  false, "FLOAT[,FLOAT...]"},
                 [](G& o, const std::string& v, const std::string& w) { o.conditioning_scale = to_double_list(v, w); },
                 [](const G& o) { return nlohmann::json(o.conditioning_scale); },
                 ""});
    str("pose-video",
        "Wan2.2-Animate: the pose video that drives the character (--image), e.g. preprocess_data.py's "
        "src_pose.mp4; the video has its length and, without --height / --width, its size. Wan2.2-S2V "
        "(optional): the pose the speaker follows, read at 16 fps from its first frame",
        "", &G::pose_video);
    str("face-video",
        "Wan2.2-Animate: the face crops of the performance, frame by frame (src_face.mp4), as long as --pose-video", "",
        &G::face_video);
    choice("animate-mode",
           "Wan2.2-Animate: animate (the character moves as the performer) or replace (the character replaces the "
           "performer in --background-video, where --mask-video is white)",
           "animate", &G::animate_mode, animate_mode_choices());
    str("background-video",
        "Wan2.2-Animate, --animate-mode replace: the video the character is put into (src_bg.mp4), as long as "
        "--pose-video",
        "", &G::background_video);
    i32("segment-frames",
        "Wan2.2-Animate: frames made per segment (4k+1; diffusers' segment_frame_length); a longer video is made "
        "segment by segment",
        "77", &G::segment_frames);
    i32("prev-segment-frames",
        "Wan2.2-Animate: the last frames of a segment that condition the next (1 or 5; diffusers' "
        "prev_segment_conditioning_frames)",
        "1", &G::prev_segment_frames);
    str("animate-inputs",
        "Wan2.2-Animate: the folder Wan2.2's preprocess_data.py writes (src_pose.mp4, src_face.mp4, src_ref.png, "
        "and for replace mode src_bg.mp4, src_mask.mp4): --pose-video, --face-video, --image (and "
        "--background-video, --mask-video) from it",
        "", &G::animate_inputs);
    str("audio",
        "Wan2.2-S2V (speech to video): the speech or song the video is made to (WAV, MP3, M4A/AAC, FLAC, Ogg, "
        "Opus, or a video's sound); the video lasts as long as it, and the MP4 carries it",
        "", &G::audio);
    f64("audio-start", "Wan2.2-S2V, with --audio: where in the recording to start, in seconds", "0", &G::audio_start);
    opt_f64("audio-duration",
            "Wan2.2-S2V, with --audio: how many seconds of the recording to use (default: to its end)", "none",
            &G::audio_duration, "(to the end)");
    i32("num-clips",
        "Wan2.2-S2V, with --audio: clips to make (each continues the one before); 0: as many as the audio needs", "0",
        &G::num_clips);
    flag("start-from-ref",
         "Wan2.2-S2V: the video starts from the reference image (Wan2.2's generate.py --start_from_ref): it fills "
         "the last of the first clip's motion frames, and none of that clip's frames is dropped",
         &G::start_from_ref);
    lora_list("lora",
              "LoRA file merged into `transformer` (A14B: the high-noise expert; TI2V-5B: the model) at load, with "
              "strength SCALE (default 1); repeatable, applied in order",
              &G::lora);
    lora_list("lora-2", "LoRA file merged into `transformer_2` (A14B: the low-noise expert); repeatable", &G::lora_2);
    i32("height", "video height in pixels (Wan2.2-S2V: height x width is the area; the image gives the aspect)", "720",
        &G::height);
    i32("width", "video width in pixels", "1280", &G::width);
    i32("num-frames", "number of frames (4k+1); Wan2.2-S2V: frames per clip (4k)", "81", &G::num_frames);
    i32("num-inference-steps", "denoising steps", "40", &G::num_inference_steps);
    f64("guidance-scale", "classifier-free guidance scale (high-noise expert `transformer`)", "5.0",
        &G::guidance_scale);
    opt_f64("guidance-scale-2",
            "guidance scale of the low-noise expert `transformer_2` (default: "
            "--guidance-scale)",
            "none", &G::guidance_scale_2, "(= guidance-scale)");
    opt_f64("boundary-ratio",
            "switch from transformer to transformer_2 when t < ratio*1000 (default: "
            "model_index.json's)",
            "none", &G::boundary_ratio, "(model default)");
    opt_f64("flow-shift", "flow-matching shift (default: scheduler_config.json's)", "none", &G::flow_shift,
            "(model default)");
    choice("sample-solver", "the sampler (diffusers' UniPCMultistepScheduler or FlowMatchEulerDiscreteScheduler)",
           "unipc", &G::sample_solver, solver_choices());
    t.push_back({{"seed", "random seed of the initial noise (CPU generator, as diffusers)", "42", false, "INT"},
                 [](G& o, const std::string& v, const std::string& w) { o.seed = to_int(v, w); },
                 [](const G& o) { return nlohmann::json(o.seed); },
                 ""});
    i32("max-sequence-length", "text tokens per prompt (padded / truncated)", "512", &G::max_sequence_length);
    str("output", "output MP4 path", "output.mp4", &G::output);
    i32("fps", "frames per second of the MP4", "16", &G::fps);
    i32("crf", "H.264 quality (0 lossless .. 51 worst)", "18", &G::crf);
    flag("overwrite", "replace an existing output file", &G::overwrite);
    flag("lora-strict",
         "a LoRA key naming a Wan2.1 image-conditioning module (k_img, v_img, img_emb) that Wan2.2 lacks is an "
         "error (default: skipped with one warning per file)",
         &G::lora_strict);
    str("save-tensors", "write intermediate tensors (safetensors) to this path", "", &G::save_tensors);
    str("report", "write the run report (JSON) to this path", "", &G::report);
    str("dump-tensors",
        "debug: write every named intermediate (text encoder, each transformer call and block, "
        "VAE) to this safetensors file, named like the reference fixtures",
        "", &G::dump_tensors);
    // use-hsdp lives in ParallelConfig.
    t.push_back({{"use-hsdp", "shard weights with HSDP", "false", true},
                 [](G& o, const std::string& v, const std::string& w) { o.parallel.use_hsdp = to_bool(v, w); },
                 [](const G& o) { return nlohmann::json(o.parallel.use_hsdp); },
                 ""});
    t.push_back({{"strict-topology",
                  "refuse a layout whose shard, Ulysses, ring or CFG groups cannot stay inside a node on this "
                  "launch's nodes (default: one warning naming them)",
                  "false", true},
                 [](G& o, const std::string& v, const std::string& w) { o.parallel.strict_topology = to_bool(v, w); },
                 [](const G& o) { return nlohmann::json(o.parallel.strict_topology); },
                 ""});
    par("hsdp-shard-size", "ranks that split one copy of the weights (-1: automatic)", "-1",
        &ParallelConfig::hsdp_shard_size);
    par("hsdp-replicate-size", "number of weight copies (shard groups)", "-1", &ParallelConfig::hsdp_replicate_size);
    choice("layout",
           "auto: choose --ulysses-degree, --ring-degree and --cfg-parallel-size from the work (videos, guidance, "
           "heads, tokens) when none is given; manual: use them as given (1 when not given)",
           "auto", &G::layout, layout_choices());
    par("ulysses-degree", "Ulysses sequence-parallel degree", "1", &ParallelConfig::ulysses_degree);
    par("ring-degree", "ring-attention sequence-parallel degree", "1", &ParallelConfig::ring_degree);
    par("cfg-parallel-size", "1, or 2 to run cond and uncond on different ranks", "1",
        &ParallelConfig::cfg_parallel_size);
    par("tensor-parallel-size", "must be 1 (HSDP replaces tensor parallelism)", "1",
        &ParallelConfig::tensor_parallel_size);
    flag("vae-parallel",
         "decode each video on all the ranks of its data-parallel group, a band of rows each (exchanging halo "
         "rows; the same frames as one rank's decode, less memory and time per rank)",
         &G::vae_parallel);
    flag("no-vae-parallel",
         "decode each video on one rank even where --vae-parallel would lower the planned memory peak (without "
         "either flag it is chosen when a video's group has several ranks and it lowers the peak)",
         &G::no_vae_parallel);
    choice("step-cache",
           "skip a step's transformer blocks when their input barely changed since the last computed step, reusing "
           "its residual: teacache (timestep-modulation change, TeaCache's Wan polynomial) or fbcache (first "
           "block's residual change)",
           "none", &G::step_cache, step_cache_choices());
    opt_f64("step-cache-threshold",
            "relative change under which --step-cache skips (0: never skip; default teacache 0.2, fbcache 0.08)",
            "none", &G::step_cache_threshold, "(mode default)");
    t.push_back(
        {{"device",
          "auto: cuda when LibTorch has CUDA and a GPU is visible, else cpu; cuda: GPU local rank % visible "
          "GPUs; or cuda:N",
          "auto", false, "auto|cpu|cuda|cuda:N"},
         [](GenerateOptions& o, const std::string& v, const std::string& w) { o.device = DeviceRequest::parse(v, w); },
         [](const GenerateOptions& o) { return nlohmann::json(o.device.str()); },
         ""});
    flag("allow-shared-gpu", "let several ranks of a node use one GPU (otherwise an error)", &G::allow_shared_gpu);
    flag("tf32",
         "let float32 matrix products and cuDNN convolutions on CUDA use TF32 tensor cores (faster; inputs "
         "rounded to 10 mantissa bits). Default: PyTorch's, which diffusers and Wan2.2 run with: products in "
         "IEEE float32, convolutions in TF32",
         &G::tf32);
    flag("exact-float32",
         "IEEE float32 for matrix products and convolutions on CUDA, so that float32 means float32 (a float32 "
         "VAE decode is about 8x slower: 72 s instead of 8.6 s at 720p on an H200)",
         &G::exact_float32);
    f64("collective-timeout",
        "seconds a GPU collective may wait for its peers before every rank is stopped "
        "with an error naming it",
        "600", &G::collective_timeout);
    choice("dtype", "transformer and text encoder dtype", "bfloat16", &G::dtype, dtype_choices());
    choice("vae-dtype", "VAE dtype", "float32", &G::vae_dtype, dtype_choices());
    choice("weight-dtype",
           "how the transformers' Linear weights are held: auto (the --dtype), or float8_e4m3fn with a float32 scale "
           "per output channel (quantized at load; half the weight memory and HSDP traffic of bfloat16; the layers "
           "of --fp8-layers only). Weights a checkpoint stores in float8_e4m3fn (fp8_scaled files) stay float8, "
           "with its scales, either way",
           "auto", &G::weight_format, weight_format_choices());
    choice("text-encoder-weight-dtype",
           "how UMT5's Linear weights are held: auto (the --dtype), or float8_e4m3fn with a float32 scale per "
           "output channel (quantized at load; the layers of --fp8-layers only, the 2.1 GB embedding stays: "
           "UMT5-XXL holds 8.6 GB with ffn, 7.1 GB with all, instead of 11.4 GB in bfloat16). Weights an "
           "fp8_scaled text encoder file stores in float8_e4m3fn stay float8 either way",
           "auto", &G::text_encoder_weight_format, weight_format_choices());
    choice("fp8-layers",
           "with --weight-dtype or --text-encoder-weight-dtype float8_e4m3fn: the Linear layers held in float8 (ffn: "
           "the feed-forward's, which vllm-omni found safe; attention: q, k, v, out; all). Embeddings, norms, "
           "modulation, patch embedding, head, biases and the first and last block always stay in --dtype",
           "ffn", &G::fp8_layers, fp8_layer_choices());
    flag("fp8-matmul",
         "float8 matrix products for the float8 weights (--weight-dtype float8_e4m3fn, or those an fp8_scaled "
         "checkpoint stores): _scaled_mm, the input scaled per token, instead of dequantizing each weight to --dtype "
         "first (sm89 and newer GPUs)",
         &G::fp8_matmul);
    choice("log-level", "messages shown (info and debug from rank 0 only)", "info", &G::log_level, log_level_choices());
    flag("strict-memory",
         "stop before loading when the memory plan exceeds the device's memory (GPU, or the node's host memory "
         "split between its ranks), instead of warning",
         &G::strict_memory);
    flag("dry-run",
         "validate, build the mesh, print the layout and the per-rank memory plan (from configs and checkpoint "
         "headers only) and exit without loading a model; with --report, write the plan there",
         &G::dry_run);
    str("plan-for",
        "with --dry-run: plan for GPUs this machine does not have, judging memory against theirs and costing "
        "attention as their kernels do: h100-80gb, h200, b200, a100-80gb, l40s, or custom:MEM_GB,TFLOPS,HBM_GBPS,"
        "LINK_GBPS; xN after it: N GPUs per node (the ranks placed on nodes of N, for the traffic estimate)",
        "", &G::plan_for, "", "GPU[xN]");
    str("calibration",
        "with --plan-for: calibrate the time plan on what was measured: the forward_bench.json tools/gpu/check.sh "
        "writes on such a GPU (its a14b forward's achieved FLOP rate, its vae21 decode's time)",
        "", &G::calibration, "", "FILE");
    return t;
  }();
  return table;
}

const Binding* find_binding(const std::string& name) {
  for (const auto& b : bindings())
    if (b.spec.name == name) return &b;
  return nullptr;
}

std::string strip_dashes(std::string s) {
  while (!s.empty() && s[0] == '-') s.erase(0, 1);
  auto eq = s.find('=');
  if (eq != std::string::npos) s = s.substr(0, eq);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

}  // namespace

const std::vector<OptionSpec>& option_table() {
  static const std::vector<OptionSpec> specs = [] {
    std::vector<OptionSpec> s;
    for (const auto& b : bindings()) s.push_back(b.spec);
    return s;
  }();
  return specs;
}

std::string closest_option(const std::string& name) {
  std::string key = strip_dashes(name);
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& b : bindings()) {
    size_t d = edit_distance(key, b.spec.name);
    // A prefix match ("--num-frame", "--guidance") is a better hint than a short unrelated name.
    if (b.spec.name.rfind(key, 0) == 0 && key.size() >= 3) d = std::min<size_t>(d, 1);
    if (d < best_d) {
      best_d = d;
      best = b.spec.name;
    }
  }
  return best;
}

const char* tool_version() {
  return OMNI_VERSION;
}

CommandLine parse_command_line(int argc, const char* const* argv) {
  CLI::App app{"omni-generate: Wan2.2 video generation on one GPU or many (launch with mpirun or srun)",
               "omni-generate"};
  app.allow_extras(true);  // unknown flags are reported by us, with a suggestion
  app.set_help_flag("-h,--help", "print this help and exit");
  app.set_version_flag("--version", std::string(OMNI_VERSION),
                       "print the versions of omni-generate, LibTorch, CUDA, cuDNN, NCCL and MPI, and exit");
  std::map<std::string, std::string> raw;
  std::map<std::string, std::vector<std::string>> lists;
  std::map<std::string, bool> flags;
  std::vector<std::pair<std::string, CLI::Option*>> registered;
  for (const auto& b : bindings()) {
    std::string help = b.spec.help;
    if (!b.spec.is_flag && !b.spec.default_text.empty()) help += " [default: " + b.spec.default_text + "]";
    CLI::Option* opt;
    if (b.spec.is_list) {
      opt = app.add_option("--" + b.spec.name, lists[b.spec.name], help)->type_name(b.spec.type_name);
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
      opt->allow_extra_args(false);  // one FILE per --lora; a following word is not a second file
    } else {
      if (b.spec.is_flag)
        opt = app.add_flag("--" + b.spec.name, flags[b.spec.name], help);
      else
        opt = app.add_option("--" + b.spec.name, raw[b.spec.name], help)->type_name(b.spec.type_name);
      // Like argparse: a flag given twice takes its last value, so scripts can append overrides.
      opt->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    }
    registered.emplace_back(b.spec.name, opt);
  }

  // Every argument is text: a prompt, a path, a number. Checked before CLI11 reads them, so an ill-formed one
  // is named by its flag here rather than found by the JSON writer after the video was made. (Python would
  // have taken it as a str with surrogate escapes, which no UTF-8 encoder accepts.)
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (text::utf8_invalid_at(arg) == std::string::npos) continue;
    const bool is_flag = arg.rfind("--", 0) == 0;
    const size_t eq = arg.find('=');
    std::string where = "argument " + std::to_string(i), value = arg;
    if (is_flag && eq != std::string::npos && eq < text::utf8_invalid_at(arg)) {  // --prompt=TEXT
      where = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (!is_flag && i > 1 && std::string_view(argv[i - 1]).rfind("--", 0) == 0 &&
               text::utf8_invalid_at(argv[i - 1]) == std::string::npos) {  // --prompt TEXT
      where = argv[i - 1];
    }
    OMNI_FAIL_USAGE(where, ": not UTF-8 at ", text::utf8_problem(value),
                    "; text arguments (prompts, paths) must be UTF-8");
  }

  CommandLine out;
  // --help-all, and --help SECTION (CLI11's help flag takes no value): the sectioned help, ours.
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help-all" || ((arg == "--help" || arg == "-h") && i + 1 < argc && argv[i + 1][0] != '-')) {
      out.help = true;
      out.help_text = help_text(arg == "--help-all" ? "all" : argv[i + 1]);
      return out;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out.help = true;
    out.help_text = help_text("");
    return out;
  } catch (const CLI::CallForVersion&) {
    out.version = true;  // the caller prints the versions of everything below (dist::version_report)
    return out;
  } catch (const CLI::ParseError& e) {
    // CLI11's messages name the option; add ours to say which flag and what it expects.
    OMNI_FAIL_USAGE(e.what(), " (run with --help for the options)");
  }
  for (const auto& extra : app.remaining()) {
    if (extra.rfind("-", 0) == 0) {
      OMNI_FAIL_USAGE("unknown flag ", extra, "; did you mean --", closest_option(extra), "?");
    }
    OMNI_FAIL_USAGE("unexpected argument '", extra, "' (options take the form --name value)");
  }
  for (const auto& [name, opt] : registered) {
    if (opt->count() == 0) continue;
    const OptionSpec& spec = find_binding(name)->spec;
    if (spec.is_list) {
      std::string joined;
      for (const auto& item : lists[name]) joined += item + "\n";
      out.values[name] = joined;
    } else {
      out.values[name] = spec.is_flag ? (flags[name] ? "true" : "false") : raw[name];
    }
  }
  return out;
}

std::map<std::string, std::string> parse_yaml_options(const std::string& yaml_text, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    // In our words: where, and yaml-cpp's own message where it says something ("bad file" is what its parser
    // says when it stops on nesting too deep for it).
    const std::string where =
        e.mark.is_null() ? std::string() : str_cat(" at line ", e.mark.line + 1, ", column ", e.mark.column + 1);
    OMNI_FAIL_USAGE(origin, ": not valid YAML", where, ": ",
                    e.msg == "bad file" ? std::string("nested too deeply, or not YAML") : e.msg);
  }
  std::map<std::string, std::string> out;
  if (root.IsNull()) return out;
  OMNI_CHECK_USAGE(root.IsMap(), origin, ": expected a mapping of option names to values");
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    const Binding* b = find_binding(key);
    OMNI_CHECK_USAGE(b != nullptr, origin, ": unknown key '", key, "'; did you mean '", closest_option(key), "'?");
    OMNI_CHECK_USAGE(key != "config", origin, ": 'config' cannot be set inside a config file");
    const YAML::Node& v = kv.second;
    if (b->spec.is_list && v.IsSequence()) {
      std::string joined;
      for (const auto& item : v) {
        OMNI_CHECK_USAGE(item.IsScalar(), origin, ": every item of '", key, "' must be one ", b->spec.type_name);
        joined += item.Scalar() + "\n";
      }
      out[key] = joined;
      continue;
    }
    OMNI_CHECK_USAGE(v.IsScalar() || v.IsNull(), origin, ": key '", key, "' must be a single value",
                     b->spec.is_list ? " or a list" : "");
    out[key] = v.IsNull() ? "null" : v.Scalar();
  }
  return out;
}

LoraSpec parse_lora_spec(const std::string& text, const std::string& where) {
  LoraSpec spec;
  spec.path = text;
  const size_t colon = text.find_last_of(':');
  if (colon != std::string::npos && colon + 1 < text.size()) {
    const std::string tail = text.substr(colon + 1);
    // Only a number after the last ':' is a scale; anything else belongs to the path.
    if (tail.find_first_not_of("0123456789.+-eE") == std::string::npos) {
      spec.path = text.substr(0, colon);
      spec.scale = to_double(tail, where + " (the SCALE of '" + text + "')");
    }
  }
  OMNI_CHECK_USAGE(!spec.path.empty(), where, ": expected FILE[:SCALE], got '", text, "'");
  return spec;
}

std::map<std::string, std::string> read_yaml_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_USAGE(in.good(), "--config: cannot open '", path, "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string problem = text::text_file_problem(ss.str(), path, "--config " + path);
  OMNI_CHECK_USAGE(problem.empty(), problem);
  return parse_yaml_options(ss.str(), "config file " + path);
}

std::map<std::string, std::string> preset_options(const std::string& preset_name) {
  const auto& texts = preset_texts();
  auto it = texts.find(preset_name);
  OMNI_CHECK(it != texts.end(), "no built-in preset named '", preset_name, "'");
  return parse_yaml_options(it->second, "preset " + preset_name);
}

std::string Source::str() const {
  switch (kind) {
    case kDefault:
      return "default";
    case kPreset:
      return "preset " + detail;
    case kConfig:
      return "config " + detail;
    case kFlag:
      return "flag";
    case kPromptsLine:
      return "--prompts-file " + detail;
    case kLayoutAuto:
      return "layout auto";
    case kMemoryPlan:
      return "memory plan";
  }
  return "unknown";
}

const char* name_of(SampleSolver v) {
  return choice_name(solver_choices(), v);
}
const char* name_of(Fp8Layers v) {
  return choice_name(fp8_layer_choices(), v);
}

const char* name_of(StepCacheMode v) {
  return choice_name(step_cache_choices(), v);
}
const char* name_of(LayoutMode v) {
  return choice_name(layout_choices(), v);
}
const char* name_of(TaskChoice v) {
  return choice_name(task_choices(), v);
}
const char* name_of(AnimateMode v) {
  return choice_name(animate_mode_choices(), v);
}

void apply_layer(GenerateOptions& opts, const std::map<std::string, std::string>& values, const Source& origin) {
  for (const auto& [key, value] : values) {
    const Binding* b = find_binding(key);
    OMNI_CHECK_USAGE(b != nullptr, origin.str(), ": unknown option '", key, "'; did you mean '", closest_option(key),
                     "'?");
    std::string where = origin.kind == Source::kFlag ? "--" + key : key + " (" + origin.str() + ")";
    b->set(opts, value, where);
    opts.sources[key] = origin;
  }
}

bool set_by_user(const GenerateOptions& o, const std::string& key) {
  auto it = o.sources.find(key);
  return it != o.sources.end() && it->second.by_user();
}

// Wan2.2-S2V's flags among themselves; against the model in job::choose_task.
void validate_speech_options(const GenerateOptions& o) {
  for (const char* flag : {"audio-start", "audio-duration", "num-clips"})
    OMNI_CHECK_USAGE(o.audio.empty() == false || !set_by_user(o, flag), "--", flag,
                     " needs --audio (the recording a Wan2.2-S2V video is made to)");
  OMNI_CHECK_USAGE(std::isfinite(o.audio_start) && o.audio_start >= 0,
                   "--audio-start must be a time in seconds, 0 "
                   "or more, got ",
                   o.audio_start);
  OMNI_CHECK_USAGE(!o.audio_duration || (std::isfinite(*o.audio_duration) && *o.audio_duration > 0),
                   "--audio-duration must be a positive number of seconds, got ", o.audio_duration.value_or(0));
  OMNI_CHECK_USAGE(o.num_clips >= 0, "--num-clips must be 0 (as many as the audio needs) or more, got ", o.num_clips);
  OMNI_CHECK_USAGE(o.audio.empty() || (o.face_video.empty() && o.animate_inputs.empty()),
                   o.face_video.empty() ? "--animate-inputs" : "--face-video",
                   " is Wan2.2-Animate's and --audio Wan2.2-S2V's: give one of them");
  OMNI_CHECK_USAGE(o.audio.empty() || (o.video.empty() && o.last_image.empty()),
                   o.video.empty() ? "--last-image" : "--video",
                   " with --audio: Wan2.2-S2V makes its video from --image, the prompt and the recording (and an "
                   "optional --pose-video)");
}

// Wan2.2-Animate's flags among themselves; against the model in job::choose_task.
void validate_animate_options(const GenerateOptions& o) {
  if (!o.audio.empty()) return;  // --pose-video is S2V's here (validate_speech_options)
  const bool replace = o.animate_mode == AnimateMode::kReplace;
  const bool animate = !o.pose_video.empty() || !o.face_video.empty() || !o.animate_inputs.empty();
  OMNI_CHECK_USAGE(!replace || animate,
                   "--animate-mode replace is Wan2.2-Animate's: give --pose-video and "
                   "--face-video (or --animate-inputs DIR)");
  OMNI_CHECK_USAGE(o.background_video.empty() || replace,
                   "--background-video is for --animate-mode replace (the character put into that video); add "
                   "--animate-mode replace, or drop it");
  OMNI_CHECK_USAGE(o.animate_inputs.empty() || (o.pose_video.empty() && o.face_video.empty()), "--animate-inputs ",
                   o.animate_inputs,
                   " names the pose and face videos itself; drop --pose-video "
                   "and --face-video, or --animate-inputs");
  OMNI_CHECK_USAGE(!o.animate_inputs.empty() || o.pose_video.empty() == o.face_video.empty(),
                   o.pose_video.empty() ? "--face-video needs --pose-video" : "--pose-video needs --face-video",
                   ": Wan2.2-Animate takes both (the body's pose and the face's expressions)");
  OMNI_CHECK_USAGE(!replace || !o.animate_inputs.empty() || (!o.background_video.empty() && !o.mask_video.empty()),
                   "--animate-mode replace needs --background-video and --mask-video (white where the character "
                   "goes), or --animate-inputs DIR with src_bg.mp4 and src_mask.mp4");
  OMNI_CHECK_USAGE(o.prev_segment_frames == 1 || o.prev_segment_frames == 5,
                   "--prev-segment-frames must be 1 or 5 "
                   "(what Wan2.2-Animate was trained with; Wan2.2 and diffusers refuse others), got ",
                   o.prev_segment_frames);
  // The segment's frames as the video's are rounded (4k+1); each segment must add one frame at least.
  const int rounded = o.segment_frames % 4 == 1 ? o.segment_frames : o.segment_frames / 4 * 4 + 1;
  OMNI_CHECK_USAGE(o.segment_frames >= 1 && rounded > o.prev_segment_frames, "--segment-frames ", o.segment_frames,
                   " (", rounded, " as 4k+1) must be more than --prev-segment-frames ", o.prev_segment_frames);
}

void validate_options(const GenerateOptions& o) {
  OMNI_CHECK_USAGE(o.height > 0 && o.height % 16 == 0, "--height must be a positive multiple of 16, got ", o.height);
  OMNI_CHECK_USAGE(o.width > 0 && o.width % 16 == 0, "--width must be a positive multiple of 16, got ", o.width);
  OMNI_CHECK_USAGE(o.num_frames >= 1, "--num-frames must be at least 1, got ", o.num_frames);
  OMNI_CHECK_USAGE(o.last_image.empty() || !o.image.empty(),
                   "--last-image needs --image: the first frame of a first-last-frame video");
  OMNI_CHECK_USAGE(o.video.empty() || o.image.empty(),
                   "--video and --image together: video-to-video starts from the clip alone (drop one of them)");
  OMNI_CHECK_USAGE(o.strength > 0 && o.strength <= 1, "--strength must lie in (0, 1], got ", o.strength);
  const bool replace = o.animate_mode == AnimateMode::kReplace;
  OMNI_CHECK_USAGE(o.mask_video.empty() || !o.control_video.empty() || replace,
                   "--mask-video needs --control-video (VACE: the mask says which of its pixels to keep, as diffusers' "
                   "WanVACEPipeline takes a mask only with a video) or --animate-mode replace (Wan2.2-Animate)");
  validate_speech_options(o);
  validate_animate_options(o);
  for (double c : o.conditioning_scale)
    OMNI_CHECK_USAGE(std::isfinite(c), "--conditioning-scale must be finite numbers, got ", c);
  OMNI_CHECK_USAGE(o.video.empty() || o.num_inference_steps * o.strength >= 1, "--strength ", o.strength, " with ",
                   o.num_inference_steps, " --num-inference-steps runs no step (int(steps x strength) is 0); ",
                   "raise either");
  OMNI_CHECK_USAGE(o.plan_for.empty() || o.dry_run, "--plan-for ", o.plan_for,
                   " plans a job for GPUs this run does not use: add --dry-run");
  if (!o.plan_for.empty()) dist::parse_plan_for(o.plan_for);  // an unknown GPU is an error here
  OMNI_CHECK_USAGE(o.calibration.empty() || !o.plan_for.empty(), "--calibration ", o.calibration,
                   " calibrates the time plan of --plan-for: give --plan-for GPU (the GPU it was measured on)");
  OMNI_CHECK_USAGE(!(o.vae_parallel && o.no_vae_parallel),
                   "--vae-parallel and --no-vae-parallel contradict each other; "
                   "give one");
  OMNI_CHECK_USAGE(o.num_inference_steps >= 1, "--num-inference-steps must be at least 1, got ", o.num_inference_steps);
  OMNI_CHECK_USAGE(o.guidance_scale >= 0, "--guidance-scale must be non-negative, got ", o.guidance_scale);
  OMNI_CHECK_USAGE(!o.guidance_scale_2 || *o.guidance_scale_2 >= 0, "--guidance-scale-2 must be non-negative, got ",
                   o.guidance_scale_2.value_or(0));
  OMNI_CHECK_USAGE(!o.boundary_ratio || (*o.boundary_ratio >= 0 && *o.boundary_ratio <= 1),
                   "--boundary-ratio must lie in [0, 1], got ", o.boundary_ratio.value_or(0));
  OMNI_CHECK_USAGE(!o.flow_shift || *o.flow_shift > 0, "--flow-shift must be positive, got ", o.flow_shift.value_or(0));
  OMNI_CHECK_USAGE(o.max_sequence_length >= 1, "--max-sequence-length must be at least 1, got ", o.max_sequence_length);
  OMNI_CHECK_USAGE(o.fps >= 1 && o.fps <= 240, "--fps must lie in [1, 240], got ", o.fps);
  OMNI_CHECK_USAGE(o.crf >= 0 && o.crf <= 51, "--crf must lie in [0, 51], got ", o.crf);
  OMNI_CHECK_USAGE(!o.step_cache_threshold || *o.step_cache_threshold >= 0,
                   "--step-cache-threshold must be non-negative, got ", o.step_cache_threshold.value_or(0));
  OMNI_CHECK_USAGE(o.collective_timeout > 0, "--collective-timeout must be a positive number of seconds, got ",
                   o.collective_timeout);
  OMNI_CHECK_USAGE(o.prompt.empty() || o.prompts_file.empty(), "--prompt and --prompts-file are exclusive; give one");
  OMNI_CHECK_USAGE(!(o.tf32 && o.exact_float32), "--tf32 and --exact-float32 are exclusive; give one");
  OMNI_CHECK_USAGE(!o.output.empty(), "--output must not be empty");
  // --fp8-matmul alone is checked against the checkpoint (pipeline::WanPipeline): fp8_scaled files have float8
  // weights without --weight-dtype.
  const bool float8 = o.weight_format == WeightFormat::kFloat8 || o.text_encoder_weight_format == WeightFormat::kFloat8;
  OMNI_CHECK_USAGE(float8 || o.fp8_layers == Fp8Layers::kFfn, "--fp8-layers ", name_of(o.fp8_layers),
                   " chooses float8 weights: it needs --weight-dtype or --text-encoder-weight-dtype float8_e4m3fn");
}

void read_config(CommandLine& cli) {
  auto cfg = cli.values.find("config");
  if (cfg != cli.values.end() && !cfg->second.empty()) cli.config = read_yaml_file(cfg->second);
  cli.config_read = true;
}

GenerateOptions resolve_options(const CommandLine& cli, const std::string& preset_name) {
  GenerateOptions opts;
  std::map<std::string, std::string> defaults;
  for (const auto& b : bindings()) defaults[b.spec.name] = b.spec.default_text;
  apply_layer(opts, defaults, {Source::kDefault, ""});
  if (!preset_name.empty()) apply_layer(opts, preset_options(preset_name), {Source::kPreset, preset_name});
  auto cfg = cli.values.find("config");
  if (cfg != cli.values.end() && !cfg->second.empty()) {
    apply_layer(opts, cli.config_read ? cli.config : read_yaml_file(cfg->second), {Source::kConfig, cfg->second});
  }
  apply_layer(opts, cli.values, {Source::kFlag, ""});
  validate_options(opts);
  return opts;
}

std::string preset_for(const std::string& model_name, const ModelFacts& facts) {
  std::string upper = model_name;
  std::transform(upper.begin(), upper.end(), upper.begin(), ::toupper);
  auto says = [&](const char* word) { return upper.find(word) != std::string::npos; };
  if (facts.animate) return "wan2.2-animate-14b";
  if (facts.s2v) return "wan2.2-s2v-14b";
  if (facts.vace) {
    if (facts.experts == 2) return "wan2.2-vace-fun-a14b";
    return facts.inner_dim == 1536 ? "wan2.1-vace-1.3b" : "wan2.1-vace-14b";
  }
  if (facts.first_last_frame) return "wan2.1-flf2v-14b-720p";
  if (facts.clip_image) return says("720P") ? "wan2.1-i2v-14b-720p" : "wan2.1-i2v-14b-480p";
  if (facts.expand_timesteps) return "wan2.2-ti2v-5b";
  const bool image = facts.pipeline_class == "WanImageToVideoPipeline";
  if (facts.experts == 2) return image ? "wan2.2-i2v-a14b" : "wan2.2-t2v-a14b";
  // One transformer without an image branch: Wan2.1 text-to-video, or one Wan2.2 expert on its own.
  if (facts.inner_dim == 1536) return "wan2.1-t2v-1.3b";
  if (says("WAN2.1") || says("WAN2_1") || says("WAN21")) return "wan2.1-t2v-14b";
  return image ? "wan2.2-i2v-a14b" : "wan2.2-t2v-a14b";
}

nlohmann::json option_json(const GenerateOptions& o, const std::string& key) {
  const Binding* b = find_binding(key);
  OMNI_CHECK(b != nullptr, "option_json: no option '", key, "'");
  return b->get(o);
}

std::string option_value(const GenerateOptions& o, const std::string& key) {
  const Binding* b = find_binding(key);
  OMNI_CHECK(b != nullptr, "option_value: no option '", key, "'");
  const nlohmann::json v = b->get(o);
  if (v.is_null() || (v.is_string() && v.get<std::string>().empty()) || (v.is_array() && v.empty())) {
    // Without --model, single component files (the options shown as kFromModel when not given) are the model:
    // no built-in model, nothing from --model.
    const bool files_alone =
        o.model.empty() && std::any_of(bindings().begin(), bindings().end(), [&](const Binding& c) {
          const nlohmann::json f = c.get(o);
          return c.unset_text == kFromModel && f.is_string() && !f.get<std::string>().empty();
        });
    if (files_alone && key == "model") return "(none: the component files)";
    if (files_alone && b->unset_text == kFromModel) return "(none)";
    return b->unset_text;
  }
  if (b->spec.is_list) {
    std::string text;
    for (const auto& item : v)
      text +=
          (text.empty() ? "" : ", ") +
          (item.is_string() ? item.get<std::string>() : item["path"].get<std::string>() + ":" + item["scale"].dump());
    return text;
  }
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string describe(const GenerateOptions& o, const std::vector<ResolvedSetting>& resolved) {
  std::ostringstream os;
  for (const auto& b : bindings()) {
    auto r =
        std::find_if(resolved.begin(), resolved.end(), [&](const ResolvedSetting& s) { return s.key == b.spec.name; });
    auto src = o.sources.find(b.spec.name);
    if (r != resolved.end()) {
      os << "  " << b.spec.name << ": " << nlohmann::json(r->value).dump() << "   [" << r->source << "]\n";
    } else {
      os << "  " << b.spec.name << ": " << option_value(o, b.spec.name) << "   ["
         << (src == o.sources.end() ? "default" : src->second.str()) << "]\n";
    }
  }
  return os.str();
}

}  // namespace omni::config
