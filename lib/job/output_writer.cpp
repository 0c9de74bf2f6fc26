#include "job/output_writer.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "core/log.h"
#include "core/sha256.h"
#include "core/tensor_dump.h"
#include "dist/device.h"
#include "io/audio_reader.h"
#include "io/safetensors.h"
#include "io/video_writer.h"
#include "job/video_list.h"
#include "pipeline/wan_pipeline.h"

namespace omni::job {
namespace {

// Whether `path` is one of our own outputs of `video` left behind by a run killed before it committed the MP4
// (sidecar and tensor files are committed first): a sidecar naming the video, or a tensor file whose metadata
// names it. A resumed run may replace those; any other existing file is the user's.
bool is_partial_output(const std::string& path, const std::string& video) {
  if (is_file(video) || !is_file(path)) return false;
  try {
    if (ends_with(path, ".json")) {
      std::ifstream in(path);
      const nlohmann::json j = nlohmann::json::parse(in);
      return j.is_object() && j.value("output", "") == video && j.contains("settings");
    }
    const io::SafetensorsFile file(path);
    auto it = file.metadata().find("output");
    return it != file.metadata().end() && it->second == video;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

nlohmann::json LoraRecords::to_json() const {
  nlohmann::json out = nlohmann::json::object();
  const char* names[2] = {"transformer", "transformer_2"};
  for (int e = 0; e < 2; ++e) {
    if (expert[e].empty()) continue;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : expert[e]) {
      const std::string name = r.path.substr(r.path.find_last_of('/') + 1);
      list.push_back({{"path", r.path}, {"name", name}, {"sha256", r.sha256}, {"scale", r.scale}});
    }
    out[names[e]] = list;
  }
  return out;
}

bool is_earlier_report(const std::string& path) {
  if (!is_file(path)) return false;
  try {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    return j.is_object() && j.contains("world_size") && j.contains("layout") && j.contains("videos");
  } catch (const std::exception&) {
    return false;
  }
}

void OutputWriter::check_paths(const VideoQueue& queue) {
  const bool resumable = !run_.prompts_file.empty() && !run_.overwrite;
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    if (queue.status(i) != VideoStatus::kPending) continue;
    const VideoSpec& v = queue.video(i);
    io::check_output_writable(v.output, run_.overwrite);
    for (const std::string& path : {v.output + ".json", v.tensors_path, v.dump_path}) {
      if (path.empty()) continue;
      if (resumable && is_partial_output(path, v.output)) replaceable_[i].insert(path);
      io::check_output_writable(path, may_replace(i, path));
    }
  }
  if (!run_.report.empty()) {
    // A resumed list rewrites its own earlier report (the same command, run again).
    replace_report_ = resumable && is_earlier_report(run_.report);
    io::check_output_writable(run_.report, may_replace_report());
  }
}

bool OutputWriter::may_replace(int index, const std::string& path) const {
  if (run_.overwrite) return true;
  auto it = replaceable_.find(index);
  return it != replaceable_.end() && it->second.count(path) != 0;
}

void OutputWriter::write(int index, const VideoSpec& v, const std::string& task,
                         const pipeline::GenerationResult& result, double seconds, const RunIdentity& run,
                         const LoraRecords& lora_records) const {
  const auto& o = v.opts;
  const nlohmann::json lora = lora_records.to_json();
  io::VideoWriteOptions vo;
  vo.fps_num = o.fps;
  vo.crf = o.crf;
  vo.overwrite = run_.overwrite;
  vo.metadata = {{"title", o.prompt},
                 {"comment", "omni-generate; seed " + std::to_string(o.seed) + "; model " + run.model_root},
                 {"prompt", o.prompt},
                 {"seed", std::to_string(o.seed)},
                 {"model", run.model_root}};
  if (!lora.empty()) vo.metadata["lora"] = lora.dump();  // each file's path, name, SHA-256 and scale
  if (!run.float8_weights.empty()) vo.metadata["float8_weights"] = run.float8_weights.dump();

  // The tensor files name their video, so that a resumed run recognizes them as its own partial outputs.
  const std::map<std::string, std::string> tag{{"output", v.output}};
  if (!v.tensors_path.empty()) io::write_safetensors(v.tensors_path, result.tensors, tag);  // paths checked up front
  if (!v.dump_path.empty()) io::write_safetensors(v.dump_path, debug::take_dumps(), tag);

  // The sidecar: every resolved setting and the timings, so that a video can be reproduced from it.
  nlohmann::json side;
  side["output"] = v.output;
  side["prompt"] = o.prompt;  // as given; as the text encoder got it (pipeline::clean_prompt), and its tokens:
  side["prompt_cleaned"] = result.prompt.cleaned;
  side["prompt_tokens"] = result.prompt.tokens;
  if (v.params().guidance_on()) {
    side["negative_prompt_cleaned"] = result.negative_prompt.cleaned;
    side["negative_prompt_tokens"] = result.negative_prompt.tokens;
  }
  side["prompt_index"] = index;
  if (v.line > 0) side["prompts_file_line"] = v.line;
  side["model"] = run.model_root;
  side["pipeline"] = run.pipeline_class;
  side["task"] = task;
  side["preset"] = run.preset;
  side["device"] = run.device;  // settings.device says what was asked ("auto"), this what ran
  side["frames"] = result.frames.size(1);
  side["height"] = result.frames.size(2);
  side["width"] = result.frames.size(3);
  if (v.params().animate) {
    // Wan2.2-Animate: its segments, and those a stopped run had finished (reused, not made again).
    side["segments"] = result.segments;
    side["segments_reused"] = result.segments_reused;
  }
  // Wan2.2-S2V: the recording the frames were made from, muxed beside them at its own rate and channels, cut or
  // padded with silence to the video's length, and what identifies it. Frame k was made from the audio at
  // (k + 3) / 16 s of the span (the first clip's first 3 frames are dropped), so the track starts 3 frames into
  // the span: lips and sound in step. (Wan2.2's merge_video_audio muxes the span from its start: its video runs
  // 3 frames, 187.5 ms, ahead of its sound.) With --start-from-ref no frame is dropped: from the span's start.
  io::AudioTrack sound;
  if (v.params().speech) {
    const io::AudioSpan span = speech_span(o);
    sound = io::load_audio_track(o.audio, span);
    const double span_seconds = sound.duration();
    // The lead cut in memory (a recording shorter than it leaves one silent sample frame: the writer pads it).
    const double lead = static_cast<double>(v.params().s2v_dropped_frames()) / static_cast<double>(pipeline::kS2VFps);
    const auto cut = std::min(static_cast<int64_t>(lead * sound.sample_rate) * sound.channels,
                              static_cast<int64_t>(sound.samples.size()));
    sound.samples.erase(sound.samples.begin(), sound.samples.begin() + cut);
    if (sound.samples.empty()) sound.samples.assign(static_cast<size_t>(sound.channels), 0.0f);
    vo.audio = &sound;
    side["audio"] = {{"file", o.audio},           {"sha256", sha256_file(o.audio)},
                     {"start", span.start},       {"muxed_from", span.start + lead},
                     {"duration", span_seconds},  {"sample_rate", sound.sample_rate},
                     {"channels", sound.channels}};
    side["clips"] = result.segments;
    side["clips_reused"] = result.segments_reused;
  }
  if (!lora.empty()) side["lora"] = lora;
  if (!run.float8_weights.empty()) side["float8_weights"] = run.float8_weights;
  nlohmann::json settings;
  for (const auto& spec : config::option_table()) settings[spec.name] = config::option_json(o, spec.name);
  nlohmann::json sources = nlohmann::json::object();  // where each setting came from
  for (const auto& [key, source] : o.sources) sources[key] = source.str();
  for (const auto& r : run.resolved) {  // what ran, where the checkpoint decided it
    settings[r.key] = r.value;
    sources[r.key] = r.source;
  }
  side["settings"] = settings;
  side["sources"] = sources;
  nlohmann::json timings;
  for (const auto& [k, val] : result.times.all()) timings[k] = val;
  timings["generate"] = seconds;
  side["timings"] = timings;
  side["layout"] = run.layout;
  side["layout_choice"] = run.layout_choice;
  side["model_files"] = run.model_files;
  if (!v.tensors_path.empty()) side["tensors"] = v.tensors_path;  // its --save-tensors file (omni-compare reads it)
  // The build that made it, a line per component (omni-generate, LibTorch, CUDA, NCCL, MPI): what a regression
  // comparison of two runs lists when it differs.
  static const nlohmann::json build = [] {
    nlohmann::json lines = nlohmann::json::array();
    std::istringstream in(dist::version_report(config::tool_version()));
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
    return lines;
  }();
  side["build"] = build;
  const std::string side_text = side.dump(2) + "\n";
  vo.before_commit = [&] {
    write_file_atomically(v.output + ".json", side_text, may_replace(index, v.output + ".json"));
  };
  io::write_video(v.output, result.frames[0], vo);  // [F, H, W, 3]
  OMNI_LOG_AT(log::Level::kInfo, "wrote ", v.output, " (", result.frames.size(1), " frames ", result.frames.size(3),
              "x", result.frames.size(2), ", ", seconds, " s)");
  if (!log::enabled(log::Level::kInfo)) log::write_all_ranks(log::Level::kInfo, str_cat("wrote ", v.output));
}

}  // namespace omni::job
