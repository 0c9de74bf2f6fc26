// GenerateOptions: every setting of a run, resolved from four layers in increasing precedence:
//   built-in defaults < model preset (configs/*.yaml) < --config FILE.yaml < command-line flags.
// All layers use the same names (the flags' kebab-case names, without the dashes, are the YAML keys).
#pragma once

#include <c10/core/ScalarType.h>

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/log.h"
#include "dist/device.h"
#include "dist/parallel_config.h"
#include "models/fp8_weights.h"
#include "models/lora_source.h"
#include "pipeline/pipeline_settings.h"
#include "sched/solver.h"

namespace omni::config {

// The typed values of the options that take one of a list are the library's own enums (sched::Solver,
// pipeline::StepCacheMode, models::Fp8Layers, dist::DeviceRequest); the ones below are the CLI's. options.cpp
// holds each option's one list of {value, name}, which the parser, --help, the error messages and name_of() all
// read: the CLI's words live here, at the top, and the layers below never see them.
// Transformer Linear weights held in float8 (--weight-dtype float8_e4m3fn): which of them (--fp8-layers).
enum class WeightFormat { kRunDtype, kFloat8 };
// --layout: degrees chosen from the work, or as given.
enum class LayoutMode { kAuto, kManual };
// --task: from model_index.json and --image, or forced.
enum class TaskChoice { kAuto, kT2V, kI2V, kTI2V, kVace, kAnimate, kS2V };
// --animate-mode: Wan2.2-Animate animates the character (animate) or puts it into a background video (replace).
enum class AnimateMode { kAnimate, kReplace };

const char* name_of(sched::Solver v);
const char* name_of(pipeline::StepCacheMode v);
const char* name_of(models::Fp8Layers v);
const char* name_of(LayoutMode v);
const char* name_of(TaskChoice v);
const char* name_of(AnimateMode v);

// Where a setting came from, lowest precedence first; `detail` names the preset, the --config file or the
// prompts-file line.
struct Source {
  enum Kind { kDefault, kPreset, kConfig, kFlag, kPromptsLine, kLayoutAuto, kMemoryPlan };
  Kind kind = kDefault;
  std::string detail;
  // "default", "preset NAME", "config FILE", "flag", "--prompts-file FILE line N", "layout auto".
  std::string str() const;
  // A flag, a --config file or a prompts-file line: the user's choice, not a default or a preset.
  bool by_user() const { return kind == kConfig || kind == kFlag || kind == kPromptsLine; }
};

// A LoRA file and the strength it is applied with (--lora FILE[:SCALE]): what the pipeline merges.
using LoraSpec = models::LoraSource;

// The defaults live in the option table (options.cpp), the one place that names each option, its help, its
// default and its typed value; resolve_options() applies them first.
struct GenerateOptions {
  // Model and task.
  std::string model;  // "" = the built-in default model
  // Single component files, replacing the --model folder's or standing without one (io/foreign_model.h).
  std::string transformer_file;    // --transformer
  std::string transformer_2_file;  // --transformer-2
  std::string text_encoder_file;   // --text-encoder
  std::string vae_file;            // --vae
  std::string image_encoder_file;  // --image-encoder
  std::string audio_encoder_file;  // --audio-encoder
  std::string tokenizer_dir;       // --tokenizer
  TaskChoice task = TaskChoice::kAuto;
  std::string config_file;

  // Inputs.
  std::string prompt;
  std::string negative_prompt;
  std::string prompts_file;
  std::string image;
  std::string last_image;  // --last-image: the last frame (first-last-frame video on an I2V model)
  std::string video;       // --video: the clip a video-to-video run starts from (T2V and TI2V-5B models)
  double strength{};       // --strength: the fraction of the schedule a video-to-video run denoises
  // VACE models (WanVACEPipeline): the control video (diffusers' `video`), its mask (`mask`: white generates,
  // black keeps), the reference images (`reference_images`, in order) and the conditioning scale (one value, or
  // one per VACE layer; empty: 1).
  std::string control_video;                  // --control-video
  std::string mask_video;                     // --mask-video
  std::vector<std::string> reference_images;  // --reference-image (repeatable)
  std::vector<double> conditioning_scale;     // --conditioning-scale X or X,Y,...
  // Wan2.2-Animate (WanAnimatePipeline): --image is the character; the pose and face videos drive it (the video
  // is the pose video's length); replace mode puts it into --background-video where --mask-video is white. The
  // video is made in segments of --segment-frames frames, each after the first conditioned on the last
  // --prev-segment-frames of the one before. --animate-inputs DIR: the folder Wan2.2's preprocess_data.py writes.
  std::string pose_video;                            // --pose-video
  std::string face_video;                            // --face-video
  std::string background_video;                      // --background-video
  AnimateMode animate_mode = AnimateMode::kAnimate;  // --animate-mode
  int segment_frames{};                              // --segment-frames
  int prev_segment_frames{};                         // --prev-segment-frames
  std::string animate_inputs;                        // --animate-inputs
  // Wan2.2-S2V (speech to video): the recording the video is made to (--audio; any file libav reads, loaded as
  // librosa.load(sr=16000) loads it), its span (--audio-start, --audio-duration: seconds), the number of clips
  // (--num-clips; 0: as many as the audio needs); --pose-video, without --face-video, is S2V's optional pose.
  std::string audio;                     // --audio
  double audio_start = 0.0;              // --audio-start
  std::optional<double> audio_duration;  // --audio-duration (unset: to the end)
  int num_clips = 0;                     // --num-clips
  bool start_from_ref = false;           // --start-from-ref (Wan2.2's generate.py --start_from_ref)
  // Not an option: the pose video's frame count, read by job::check_inputs (0 before).
  int64_t animate_frames = 0;
  // Not an option: Wan2.2-S2V's clips, from the recording's length and --num-clips (job::check_inputs; 0 before).
  int64_t speech_clips = 0;
  std::vector<LoraSpec> lora;    // --lora (repeatable): merged into `transformer`
  std::vector<LoraSpec> lora_2;  // --lora-2 (repeatable): merged into `transformer_2`

  // Sampling.
  int height{};
  int width{};
  int num_frames{};
  int num_inference_steps{};
  double guidance_scale{};
  std::optional<double> guidance_scale_2;  // unset: same as guidance_scale
  std::optional<double> boundary_ratio;    // unset: model_index.json's
  std::optional<double> flow_shift;        // unset: scheduler_config.json's
  sched::Solver sample_solver = sched::Solver::kUniPC;
  int64_t seed{};
  int max_sequence_length{};

  // Outputs.
  std::string output;
  int fps{};
  int crf{};
  bool overwrite{};
  bool lora_strict{};  // --lora-strict: a LoRA's Wan2.1-only keys are an error, not skipped
  std::string save_tensors;
  std::string dump_tensors;
  std::string report;

  // Parallelism.
  dist::ParallelConfig parallel;
  LayoutMode layout = LayoutMode::kAuto;  // how the compute degrees are chosen
  bool vae_parallel{};                    // decode each video over the ranks of its data-parallel group
  bool no_vae_parallel{};                 // never choose --vae-parallel automatically
  pipeline::StepCacheMode step_cache = pipeline::StepCacheMode::kNone;
  WeightFormat weight_format = WeightFormat::kRunDtype;               // --weight-dtype
  WeightFormat text_encoder_weight_format = WeightFormat::kRunDtype;  // --text-encoder-weight-dtype
  models::Fp8Layers fp8_layers = models::Fp8Layers::kFfn;             // --fp8-layers
  bool fp8_matmul{};                                                  // --fp8-matmul
  std::optional<double> step_cache_threshold;                         // unset: the mode's default

  // Runtime.
  dist::DeviceRequest device;
  bool allow_shared_gpu{};
  bool tf32{};                  // TF32 for float32 matmuls and cuDNN convolutions on CUDA (dist::set_float32_math)
  bool exact_float32{};         // IEEE float32 for both (default: LibTorch's, products IEEE, convolutions TF32)
  double collective_timeout{};  // seconds
  c10::ScalarType dtype = c10::ScalarType::BFloat16;  // transformer and text encoder
  c10::ScalarType vae_dtype = c10::ScalarType::Float;
  log::Level log_level = log::Level::kInfo;
  bool strict_memory{};  // a memory plan over the device's memory is an error, not a warning
  bool dry_run{};
  std::string calibration;  // --calibration FILE: forward_bench.json calibrating --plan-for's time plan
  std::string plan_for;     // --plan-for GPU[xN]: the dry run plans for that GPU (dist::parse_plan_for)

  // Which layer set each key, for --dry-run, the sidecars and set_by_user.
  std::map<std::string, Source> sources;
};

// Whether the user set `key` (a flag, a --config file, a prompts-file line), not a default or a preset.
bool set_by_user(const GenerateOptions& o, const std::string& key);

// One option of the table that the command line, the YAML files and the presets share.
struct OptionSpec {
  std::string name;  // kebab-case, no dashes: "num-frames"
  std::string help;
  std::string default_text;        // shown in --help
  bool is_flag = false;            // boolean switch (--use-hsdp); YAML takes true/false
  std::string type_name = "TEXT";  // shown in --help: TEXT, INT, FLOAT
  // Repeatable (--lora a --lora b) and a YAML list; the raw value holds the items one per line. A layer that
  // sets it replaces the list of the layers below (the flags' list replaces the --config file's).
  bool is_list = false;
};

const std::vector<OptionSpec>& option_table();

// The closest option name to `name` (edit distance), for "did you mean --num-frames?" hints.
std::string closest_option(const std::string& name);

// Parsed command line: the raw values of the flags that were given, in the table's names.
struct CommandLine {
  std::map<std::string, std::string> values;
  bool help = false;
  std::string help_text;
  bool version = false;  // --version: print dist::version_report(tool_version()) and exit
  // The --config file's options, read once by read_config (the model's flags are looked up in it before the
  // options are resolved over the preset it decides).
  bool config_read = false;
  std::map<std::string, std::string> config;
};

// Reads the --config file named on `cli` (if any) into cli.config; usage errors as read_yaml_file's.
void read_config(CommandLine& cli);

// omni-generate's own version (the CMake project version).
const char* tool_version();

// Parses argv with CLI11. Unknown flags, missing values and malformed numbers are usage errors naming the
// flag and suggesting the closest valid one.
CommandLine parse_command_line(int argc, const char* const* argv);

// "FILE[:SCALE]" -> {FILE, SCALE}; the scale is what follows the last ':' when that is a number (1.0 when
// absent). `where` names the flag or file in the usage error for a bad scale.
LoraSpec parse_lora_spec(const std::string& text, const std::string& where);

// Reads a YAML mapping of option names to scalars (lists for the repeatable options); unknown keys are usage errors
// naming the file and the key (with a suggestion). `origin` names the source in messages ("config file x.yaml", "preset
// t2v-a14b").
std::map<std::string, std::string> parse_yaml_options(const std::string& yaml_text, const std::string& origin);
std::map<std::string, std::string> read_yaml_file(const std::string& path);

// The built-in presets: "wan2.2-t2v-a14b", "wan2.2-i2v-a14b", "wan2.2-ti2v-5b" (configs/<name>.yaml, embedded
// in the binary at build time).
const std::map<std::string, std::string>& preset_texts();
std::map<std::string, std::string> preset_options(const std::string& preset_name);

// Applies one layer of raw values onto `opts`, converting each to its type; a bad value is a usage error
// naming the option and `origin`.
void apply_layer(GenerateOptions& opts, const std::map<std::string, std::string>& values, const Source& origin);

// Checks the values that do not depend on the model: positive sizes, sizes multiple of 16, known solver and
// dtypes, non-negative guidance, and so on. Usage errors name the flag and the value.
void validate_options(const GenerateOptions& opts);

// The whole resolution: defaults, then the preset `preset_name` (may be empty), then --config, then flags.
GenerateOptions resolve_options(const CommandLine& cli, const std::string& preset_name);

// What a model is, as far as choosing its preset goes: its model_index.json (or what stands for it) and its
// transformer's config.
struct ModelFacts {
  std::string pipeline_class;     // WanPipeline, WanImageToVideoPipeline
  bool expand_timesteps = false;  // TI2V-5B
  int experts = 1;                // 2: Wan2.2's A14B models
  bool clip_image = false;        // the transformer's CLIP image branch: Wan2.1 I2V and FLF2V
  bool first_last_frame = false;  // with its image position table: Wan2.1 FLF2V
  int64_t inner_dim = 0;          // the transformer's width: 1536 for Wan2.1 T2V-1.3B, 5120 for the 14B models
  bool vace = false;              // WanVACEPipeline: Wan2.1-VACE, Wan2.2-VACE-Fun (two experts)
  bool animate = false;           // WanAnimatePipeline: Wan2.2-Animate-14B
  bool s2v = false;               // WanS2VPipeline: Wan2.2-S2V-14B
};

// Which preset fits a model. What its files say decides where it can (a CLIP image branch is Wan2.1 I2V, with the
// position table FLF2V; VACE by its width and experts; two experts Wan2.2 A14B; expand_timesteps TI2V-5B; width 1536
// Wan2.1 T2V-1.3B); the name decides what they cannot: 480P or 720P for Wan2.1 I2V (480P when it says neither), and
// whether a one-expert 14B text-to-video model is Wan2.1 ("Wan2.1" in the name) or a Wan2.2 expert alone (the default,
// "wan2.2-t2v-a14b").
std::string preset_for(const std::string& model_name, const ModelFacts& facts);

// The resolved value of option `key`, typed as the option is (the JSON sidecar's settings).
nlohmann::json option_json(const GenerateOptions& opts, const std::string& key);
// The same as text (what --dry-run shows): an unset optional or empty string as its meaning, "(model default)".
std::string option_value(const GenerateOptions& opts, const std::string& key);

// A setting decided after the options were resolved, by what the run found (the checkpoint's own flow_shift
// where the user gave none): kept beside the options, never written into them, and shown and recorded in
// the option's place.
struct ResolvedSetting {
  std::string key;  // the option's name: "flow-shift"
  double value = 0;
  std::string source;  // "checkpoint <file>"
};

// Every resolved setting as "key: value" lines, with its source; `resolved` in place of the options' values.
std::string describe(const GenerateOptions& opts, const std::vector<ResolvedSetting>& resolved = {});

}  // namespace omni::config
