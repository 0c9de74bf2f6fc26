#include "job/video_list.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/files.h"
#include "io/json_file.h"
#include "text/utf8.h"

namespace omni::job {
namespace {

// Prompts-file lines with the 1-based line number of each; blank lines and # comments are skipped.
// The file must be UTF-8 (a UTF-8 byte-order mark is dropped): Python's open() would raise UnicodeDecodeError
// on its first ill-formed byte, and a UTF-16 file read as bytes would be prompts of NULs and mojibake.
std::vector<std::pair<int, std::string>> read_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_INPUT(in.good(), "--prompts-file: cannot open '", path, "'");
  std::stringstream bytes;
  bytes << in.rdbuf();
  std::string text = bytes.str();
  const std::string problem = text::text_file_problem(text, path, "--prompts-file " + path);
  OMNI_CHECK_USAGE(problem.empty(), problem);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);
  std::istringstream lines_in(text);
  std::vector<std::pair<int, std::string>> lines;
  std::string line;
  for (int number = 1; std::getline(lines_in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;
    lines.emplace_back(number, line.substr(b));
  }
  OMNI_CHECK_USAGE(!lines.empty(), "--prompts-file '", path,
                   "' holds no prompt (text: one per line, # starts a comment; .jsonl: one JSON object per line)");
  return lines;
}

// The byte offset in `text` of the first \uD800-\uDFFF escape without its pair, or npos. Python's json reads
// such an escape into a str; nlohmann's parser (rightly) refuses it, and says so only at the byte after it.
size_t lone_surrogate_at(const std::string& text) {
  auto escape_at = [&](size_t i, unsigned* unit) {  // a \uXXXX escape at i: its code unit
    if (i + 6 > text.size() || text[i] != '\\' || text[i + 1] != 'u') return false;
    const std::string hex = text.substr(i + 2, 4);
    if (hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) return false;
    *unit = static_cast<unsigned>(std::stoul(hex, nullptr, 16));
    return true;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') continue;
    unsigned unit = 0;
    if (!escape_at(i, &unit)) {
      ++i;  // an escaped character: skip it (so "\\ud800" is a backslash and text)
      continue;
    }
    unsigned next = 0;
    if (unit >= 0xD800 && unit <= 0xDBFF && escape_at(i + 6, &next) && next >= 0xDC00 && next <= 0xDFFF) {
      i += 11;  // a pair: one character
      continue;
    }
    if (unit >= 0xD800 && unit <= 0xDFFF) return i;
    i += 5;
  }
  return std::string::npos;
}

// A JSON value as the option layer's raw text.
std::string raw_text(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// The options of one JSON Lines object over the run's.
void apply_json_line(VideoSpec& video, const std::string& text, const config::GenerateOptions& run) {
  nlohmann::json obj;
  try {
    obj = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    // A lone surrogate escape ("\ud800") is valid JSON to Python's json, but it is no character: no UTF-8
    // holds it, and diffusers' tokenizer would refuse the str.
    const size_t lone = lone_surrogate_at(text);
    OMNI_CHECK_USAGE(lone == std::string::npos, "not valid JSON at column ", lone + 1, ": ", text.substr(lone, 6),
                     " is half of a surrogate pair without its other half (Python's json accepts it, but it is not ",
                     "a character: UTF-8 cannot hold it)");
    OMNI_FAIL_USAGE("not valid JSON at column ", e.byte, ": ", io::json_error_text(e, /*position=*/false));
  } catch (const nlohmann::json::exception& e) {
    OMNI_FAIL_USAGE("not valid JSON: ", io::json_error_text(e));  // "number overflow parsing '1e400'"
  }
  OMNI_CHECK_USAGE(obj.is_object(), "expected a JSON object {\"prompt\": ...}, got ", obj.type_name());
  const auto& allowed = per_video_options();
  std::map<std::string, std::string> values;
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    std::string key = it.key();
    std::replace(key.begin(), key.end(), '_', '-');
    if (key == "reference-images") key = "reference-image";  // a list of files, as diffusers' reference_images
    const bool known = std::find(allowed.begin(), allowed.end(), key) != allowed.end();
    if (!known) {
      const std::string closest = config::closest_option(key);
      OMNI_CHECK_USAGE(closest == key, "unknown key '", it.key(), "'; did you mean '", closest, "'?");
      OMNI_FAIL_USAGE("'", it.key(),
                      "' cannot vary per video: data-parallel groups run in lockstep (the same steps and expert "
                      "switches, the same model); set it for the whole run (flag or --config)");
    }
    // null is a key not given: the run's value (Python writes None so; never the text "null").
    if (it.value().is_null()) continue;
    // Lists: the reference images (strings, one per line as a repeated flag's) and the per-layer conditioning
    // scales (numbers, joined by commas as the flag takes them).
    if (it.value().is_array() && (key == "reference-image" || key == "conditioning-scale")) {
      const bool files = key == "reference-image";
      std::string joined;
      for (const auto& item : it.value()) {
        OMNI_CHECK_USAGE(files ? item.is_string() : item.is_number(), "key '", it.key(), "' must be a list of ",
                         files ? "file names (strings)" : "numbers", ", found ", item.dump());
        joined += (files || joined.empty() ? "" : ",") + raw_text(item) + (files ? "\n" : "");
      }
      values[key] = joined;
      continue;
    }
    OMNI_CHECK_USAGE(it.value().is_string() || it.value().is_number(), "key '", it.key(),
                     "' must be a string or a number, got ", it.value().type_name());
    values[key] = raw_text(it.value());
  }
  OMNI_CHECK_USAGE(values.count("prompt") && !values["prompt"].empty(), "no \"prompt\" (a non-empty string)");
  config::apply_layer(video.opts, values,
                      {config::Source::kPromptsLine, run.prompts_file + " line " + std::to_string(video.line)});
  // Guidance on or off decides whether the negative prompt is encoded: the text encoder's gathers, which
  // groups sharing shards must run alike.
  const bool on = video.params().guidance_on(), run_on = video_params(run).guidance_on();
  OMNI_CHECK_USAGE(on == run_on, "guidance_scale ", video.opts.guidance_scale, " turns guidance ", on ? "on" : "off",
                   " but the run's (", run.guidance_scale, ") turns it ", run_on ? "on" : "off",
                   "; every video of a run must agree (guidance is on above 1)");
  config::GenerateOptions check = video.opts;
  check.prompts_file.clear();  // validate_options wants --prompt and --prompts-file exclusive
  config::validate_options(check);
  if (values.count("output")) video.output = video.opts.output;
}

}  // namespace

io::AudioSpan speech_span(const config::GenerateOptions& o) {
  io::AudioSpan span;
  span.start = o.audio_start;
  span.duration = o.audio_duration.value_or(-1.0);
  return span;
}

pipeline::VideoParams video_params(const config::GenerateOptions& o) {
  pipeline::VideoParams v;
  v.height = o.height;
  v.width = o.width;
  v.num_frames = o.num_frames;
  v.num_inference_steps = o.num_inference_steps;
  v.guidance_scale = o.guidance_scale;
  v.guidance_scale_2 = o.guidance_scale_2;
  v.seed = o.seed;
  v.max_sequence_length = o.max_sequence_length;
  v.image = !o.image.empty();
  v.last_image = !o.last_image.empty();
  v.video = !o.video.empty();
  v.strength = o.strength;
  v.reference_images = static_cast<int>(o.reference_images.size());
  v.control_video = !o.control_video.empty();
  v.mask_video = !o.mask_video.empty();
  // Wan2.2-Animate: a segment's frames stand where the video's would (its noise and latents); the video is the
  // pose video's length once check_inputs has read it.
  v.speech = !o.audio.empty();
  v.animate = (!o.pose_video.empty() || !o.animate_inputs.empty()) && !v.speech;
  v.speech_clips = o.speech_clips;
  v.start_from_ref = v.speech && o.start_from_ref;
  if (v.animate) {
    v.mask_video = false;  // replace mode's mask, not VACE's
    v.replace = o.animate_mode == config::AnimateMode::kReplace;
    v.num_frames = o.segment_frames;
    v.prev_segment_frames = o.prev_segment_frames;
    v.animate_frames = o.animate_frames;
  }
  return v;
}

void expand_animate_inputs(config::GenerateOptions& o) {
  if (o.animate_inputs.empty()) return;
  const std::string& dir = o.animate_inputs;
  OMNI_CHECK_USAGE(is_dir(dir), "--animate-inputs ", dir,
                   ": not a folder (the one Wan2.2's preprocess_data.py "
                   "writes: src_pose.mp4, src_face.mp4, src_ref.png)");
  const bool replace = o.animate_mode == config::AnimateMode::kReplace;
  auto take = [&](std::string& flag, const char* name, const char* why) {
    if (!flag.empty()) return;  // given apart: it wins
    flag = dir + "/" + name;
    OMNI_CHECK_USAGE(is_file(flag), "--animate-inputs ", dir, " has no ", name, " (", why, ")");
  };
  take(o.pose_video, "src_pose.mp4", "the pose video preprocess_data.py writes");
  take(o.face_video, "src_face.mp4", "the face video preprocess_data.py writes");
  take(o.image, "src_ref.png", "the character image preprocess_data.py copies; or give --image");
  if (replace) {
    take(o.background_video, "src_bg.mp4", "--animate-mode replace: preprocess_data.py writes it with --replace_flag");
    take(o.mask_video, "src_mask.mp4", "--animate-mode replace: preprocess_data.py writes it with --replace_flag");
  }
}

pipeline::VideoParams VideoSpec::params() const {
  return video_params(opts);
}

const std::vector<std::string>& per_video_options() {
  static const std::vector<std::string> keys = {"prompt",
                                                "negative-prompt",
                                                "seed",
                                                "image",
                                                "last-image",
                                                "video",
                                                "strength",
                                                "control-video",
                                                "mask-video",
                                                "reference-image",
                                                "conditioning-scale",
                                                "pose-video",
                                                "face-video",
                                                "background-video",
                                                "animate-mode",
                                                "animate-inputs",
                                                "audio",
                                                "audio-start",
                                                "audio-duration",
                                                "num-clips",
                                                "output",
                                                "height",
                                                "width",
                                                "num-frames",
                                                "guidance-scale",
                                                "guidance-scale-2",
                                                "max-sequence-length",
                                                "fps",
                                                "crf"};
  return keys;
}

std::vector<VideoSpec> planned_video_list(const config::GenerateOptions& run) {
  if (!run.prompt.empty() || !run.prompts_file.empty()) return read_video_list(run);
  config::GenerateOptions one = run;
  one.prompt = "(no prompt given)";
  return read_video_list(one);
}

std::vector<bool> already_written(const std::vector<VideoSpec>& videos, const config::GenerateOptions& run,
                                  const dist::Communicator& world) {
  const bool resumable = !run.prompts_file.empty() && !run.overwrite;
  std::string done;
  if (world.rank() == 0)
    for (const auto& v : videos) done += resumable && is_file(v.output) ? '1' : '0';
  done = world.broadcast(done);
  std::vector<bool> out;
  for (char c : done) out.push_back(c == '1');
  return out;
}

std::string indexed_path(const std::string& path, int index, int count) {
  if (count <= 1) return path;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "-%04d", index);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

void with_origin(const std::string& origin, const std::function<void()>& fn) {
  if (origin.empty()) return fn();
  try {
    fn();
  } catch (const Error& e) {
    throw Error(e.code(), origin + ": " + e.what());
  }
}

std::vector<VideoSpec> read_video_list(const config::GenerateOptions& run) {
  std::vector<VideoSpec> videos;
  if (run.prompts_file.empty()) {
    OMNI_CHECK_USAGE(!run.prompt.empty(), "no prompt: give --prompt TEXT or --prompts-file FILE");
    VideoSpec v;
    v.opts = run;
    videos.push_back(std::move(v));
  } else {
    const bool jsonl = ends_with(run.prompts_file, ".jsonl");
    for (const auto& [number, text] : read_lines(run.prompts_file)) {
      VideoSpec v;
      v.opts = run;
      v.line = number;
      v.origin = "--prompts-file " + run.prompts_file + " line " + std::to_string(number);
      if (jsonl)
        with_origin(v.origin, [&] { apply_json_line(v, text, run); });
      else
        v.opts.prompt = text;
      videos.push_back(std::move(v));
    }
  }
  const int n = static_cast<int>(videos.size());
  std::map<std::string, int> writer_of;  // output path -> index of the video writing it
  for (int i = 0; i < n; ++i) {
    VideoSpec& v = videos[static_cast<size_t>(i)];
    with_origin(v.origin, [&] { expand_animate_inputs(v.opts); });
    if (v.output.empty()) v.output = indexed_path(run.output, i, n);
    v.opts.output = v.output;
    if (!run.save_tensors.empty()) v.tensors_path = indexed_path(run.save_tensors, i, n);
    if (!run.dump_tensors.empty()) v.dump_path = indexed_path(run.dump_tensors, i, n);
    auto [it, fresh] = writer_of.emplace(v.output, i);
    OMNI_CHECK_USAGE(fresh, "--prompts-file ", run.prompts_file, ": lines ",
                     videos[static_cast<size_t>(it->second)].line, " and ", v.line, " both write '", v.output,
                     "'; give each video its own \"output\"");
    // The steps a video runs (video-to-video: its strength's share of the schedule) decide the transformer's
    // gathers, which groups sharing shards run in lockstep: one count for the whole run.
    const VideoSpec& first = videos.front();
    OMNI_CHECK_USAGE(v.params().steps_run() == first.params().steps_run(), "--prompts-file ", run.prompts_file,
                     ": line ", v.line, " runs ", v.params().steps_run(), " steps",
                     v.params().video ? " (strength)" : "", " but line ", first.line, " runs ",
                     first.params().steps_run(),
                     "; every video of a run must run the same number of steps (video-to-video runs "
                     "int(steps x strength) of them): give the videos one strength, or run them apart");
  }
  return videos;
}

}  // namespace omni::job
