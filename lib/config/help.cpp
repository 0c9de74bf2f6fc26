#include "config/help.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <utility>

#include "config/options.h"
#include "core/error.h"

namespace omni::config {

namespace {

// --help in sections. Each option is in exactly one section (tests/config checks it); the short --help lists the
// options most runs need, one line each with a short text; --help SECTION and --help-all give every option of a
// section, or all, with its full description.
struct HelpSection {
  const char* key;                                          // --help KEY
  const char* title;                                        // the section's heading
  std::vector<std::pair<const char*, const char*>> common;  // option, short text (the short --help)
  std::vector<const char*> more;                            // the section's other options
};

const std::vector<HelpSection>& help_sections() {
  static const std::vector<HelpSection> sections = {
      {"model",
       "Model and weights",
       {{"model", "model folder (Diffusers or original) or ORG/NAME in the HF cache; none: a tiny demo"},
        {"transformer", "a transformer file (ComfyUI, original, diffusers) replacing --model's or alone"},
        {"lora", "a LoRA file merged into the (high-noise) transformer, repeatable"}},
       {"transformer-2", "text-encoder", "vae", "tokenizer", "image-encoder", "audio-encoder", "lora-2", "lora-strict",
        "task", "config"}},
      {"video",
       "The video",
       {{"prompt", "text prompt, any language"},
        {"prompts-file", "a batch: one prompt per line, or .jsonl with per-video settings (resumes)"},
        {"image", "first frame (image-to-video); --last-image for first-last frame"},
        {"video", "a clip to start from (video-to-video), with --strength"},
        {"control-video", "VACE: the control video (pose, depth, a clip to inpaint); --mask-video"},
        {"height", "video size in pixels (with an image and no size: its aspect)"},
        {"width", "video size in pixels"},
        {"num-frames", "frames (4k + 1)"},
        {"seed", "random seed"}},
       {"negative-prompt", "last-image", "strength", "mask-video", "reference-image", "conditioning-scale", "fps",
        "pose-video", "face-video", "animate-mode", "background-video", "segment-frames", "prev-segment-frames",
        "animate-inputs", "audio", "audio-start", "audio-duration", "num-clips", "start-from-ref"}},
      {"sampling",
       "Sampling",
       {{"num-inference-steps", "denoising steps"},
        {"guidance-scale", "guidance scale (--guidance-scale-2: the low-noise expert's)"},
        {"flow-shift", "the scheduler's shift"}},
       {"guidance-scale-2", "boundary-ratio", "sample-solver", "max-sequence-length"}},
      {"parallel",
       "Parallelism (launch with mpirun or srun)",
       {{"use-hsdp", "shard the weights over --hsdp-shard-size ranks"},
        {"hsdp-shard-size", "ranks that share one copy of the weights"},
        {"ulysses-degree", "Ulysses sequence parallelism (default: chosen by --layout auto)"},
        {"ring-degree", "ring attention sequence parallelism"},
        {"cfg-parallel-size", "2: the guidance branches on different ranks"},
        {"vae-parallel", "decode each video on all its group's ranks (same frames, less memory)"}},
       {"no-vae-parallel", "hsdp-replicate-size", "layout", "tensor-parallel-size", "strict-topology", "device",
        "allow-shared-gpu", "collective-timeout"}},
      {"memory",
       "Memory and precision",
       {{"dtype", "transformer and text encoder dtype"},
        {"weight-dtype", "float8_e4m3fn: float8 transformer weights (half the memory of bfloat16)"},
        {"step-cache", "skip blocks whose input barely changed (teacache, fbcache)"}},
       {"vae-dtype", "text-encoder-weight-dtype", "fp8-layers", "fp8-matmul", "tf32", "exact-float32",
        "step-cache-threshold", "strict-memory", "plan-for", "calibration"}},
      {"outputs",
       "Outputs and reports",
       {{"output", "the MP4 (a JSON sidecar is written beside it)"},
        {"overwrite", "replace existing outputs"},
        {"report", "per-rank memory, traffic and timings as JSON"}},
       {"crf", "save-tensors"}},
      {"debug",
       "Debugging",
       {{"dry-run", "check everything, print the layout, settings and memory plan; load nothing"},
        {"log-level", "messages shown"}},
       {"dump-tensors"}},
  };
  return sections;
}

const OptionSpec& help_spec(const std::string& name) {
  for (const auto& spec : option_table())
    if (spec.name == name) return spec;
  OMNI_FAIL("--help: no option '", name, "'");
}

std::string option_usage(const OptionSpec& spec) {
  return "--" + spec.name + (spec.is_flag ? "" : " " + spec.type_name);
}

// One option in full: its usage, then its description wrapped at 100 columns, indented.
void full_option(std::ostringstream& os, const OptionSpec& spec) {
  os << "  " << option_usage(spec) << "\n";
  std::string text = spec.help;
  if (!spec.is_flag && !spec.default_text.empty()) text += " [default: " + spec.default_text + "]";
  std::istringstream words(text);
  std::string word, line;
  while (words >> word) {
    if (!line.empty() && line.size() + 1 + word.size() > 94) {
      os << "      " << line << "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  if (!line.empty()) os << "      " << line << "\n";
}

const char* kHelpExamples =
    "Examples:\n"
    "  omni-generate --model Wan-AI/Wan2.2-TI2V-5B-Diffusers --prompt \"A red fox in the snow\" --output fox.mp4\n"
    "  mpirun -np 4 omni-generate --model Wan-AI/Wan2.2-I2V-A14B-Diffusers --use-hsdp --hsdp-shard-size 4 \\\n"
    "      --image cat.jpg --prompt \"The cat jumps\" --output cat.mp4\n"
    "  srun omni-generate --model Wan-AI/Wan2.2-T2V-A14B-Diffusers --prompts-file batch.jsonl --dry-run\n";

}  // namespace

std::vector<std::vector<std::string>> help_section_options() {
  std::vector<std::vector<std::string>> out;
  for (const auto& s : help_sections()) {
    out.emplace_back();
    for (const auto& [name, text] : s.common) out.back().push_back(name);
    for (const char* name : s.more) out.back().push_back(name);
  }
  return out;
}

std::string help_text(const std::string& section) {
  std::ostringstream os;
  const auto& sections = help_sections();
  if (section.empty()) {
    // Options a model's preset sets (configs/*.yaml): their built-in default is not what a run gets.
    std::set<std::string> preset_set;
    for (const auto& [preset, text] : preset_texts())
      for (const auto& [key, value] : preset_options(preset)) preset_set.insert(key);
    os << "omni-generate: Wan video generation on one GPU or many (launch with mpirun or srun)\n"
          "Usage: omni-generate [OPTIONS]   (--help SECTION or --help-all: every option, described in full)\n";
    for (const auto& s : sections) {
      os << "\n" << s.title << " (--help " << s.key << ": " << s.common.size() + s.more.size() << " options)\n";
      for (const auto& [name, text] : s.common) {
        const OptionSpec& spec = help_spec(name);
        std::string usage = option_usage(spec);
        usage.resize(std::max<size_t>(usage.size(), 28), ' ');
        os << "  " << usage << " " << text;
        if (preset_set.count(name)) {
          os << " [preset]";
        } else if (!spec.is_flag && !spec.default_text.empty()) {
          os << " [" << spec.default_text << "]";
        }
        os << "\n";
      }
    }
    os << "\n"
       << kHelpExamples << "\nThe manual: README.md and docs/ (docs/troubleshooting.md when something fails).\n";
    return os.str();
  }
  const bool all = section == "all";
  bool found = false;
  for (const auto& s : sections) {
    if (!all && section != s.key) continue;
    found = true;
    os << s.title << ":\n";
    for (const auto& [name, text] : s.common) full_option(os, help_spec(name));
    for (const char* name : s.more) full_option(os, help_spec(name));
    os << "\n";
  }
  if (!found) {
    std::string keys;
    for (const auto& s : sections) keys += std::string(keys.empty() ? "" : ", ") + s.key;
    OMNI_FAIL_USAGE("--help ", section, ": no such section; the sections are ", keys, " (or --help-all)");
  }
  if (all) os << kHelpExamples;
  return os.str();
}

}  // namespace omni::config
