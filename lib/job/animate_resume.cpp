#include "job/animate_resume.h"

#include <cstdio>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "core/sha256.h"
#include "io/safetensors.h"

namespace omni::job {

std::string animate_resume_path(const std::string& output) {
  return output + ".segments.safetensors";
}

std::string animate_fingerprint(const config::GenerateOptions& o, const RunIdentity& run) {
  // Settings that place the work (layout, device), format the output or the log, or name files whose content is
  // hashed below: they do not change a frame.
  static const std::set<std::string> neutral = {"output",
                                                "fps",
                                                "crf",
                                                "overwrite",
                                                "report",
                                                "save-tensors",
                                                "dump-tensors",
                                                "log-level",
                                                "prompts-file",
                                                "config",
                                                "dry-run",
                                                "plan-for",
                                                "calibration",
                                                "layout",
                                                "ulysses-degree",
                                                "ring-degree",
                                                "cfg-parallel-size",
                                                "use-hsdp",
                                                "hsdp-shard-size",
                                                "hsdp-replicate-size",
                                                "strict-topology",
                                                "tensor-parallel-size",
                                                "vae-parallel",
                                                "no-vae-parallel",
                                                "device",
                                                "allow-shared-gpu",
                                                "collective-timeout",
                                                "strict-memory",
                                                "image",
                                                "pose-video",
                                                "face-video",
                                                "background-video",
                                                "mask-video",
                                                "animate-inputs",
                                                "audio"};
  nlohmann::json what;
  for (const auto& spec : config::option_table())
    if (!neutral.count(spec.name)) what["settings"][spec.name] = config::option_json(o, spec.name);
  for (const auto& r : run.resolved) what["resolved"][r.key] = r.value;
  what["model"] = run.model_root;
  what["model_files"] = run.model_files;
  what["pipeline"] = run.pipeline_class;
  const bool replace = o.animate_mode == config::AnimateMode::kReplace;
  for (const auto& [name, path] :
       std::vector<std::pair<std::string, std::string>>{{"image", o.image},
                                                        {"pose", o.pose_video},
                                                        {"face", o.face_video},
                                                        {"background", replace ? o.background_video : ""},
                                                        {"mask", replace ? o.mask_video : ""},
                                                        {"audio", o.audio}})
    if (!path.empty()) what["inputs"][name] = sha256_file(path);
  Sha256 h;
  const std::string text = what.dump();
  h.update(text.data(), text.size());
  return h.hex_digest();
}

pipeline::AnimateProgress read_animate_resume(const std::string& path, const std::string& fingerprint, int segments,
                                              const pipeline::VideoParams& video, int temporal_factor) {
  pipeline::AnimateProgress none;
  if (!is_file(path)) return none;
  try {
    io::SafetensorsFile file(path);
    const auto& meta = file.metadata();
    auto value = [&](const char* key) {
      const auto it = meta.find(key);
      return it == meta.end() ? std::string() : it->second;
    };
    if (value("fingerprint") != fingerprint || value("segments") != std::to_string(segments)) {
      OMNI_WARN(path, " was left by a run with other inputs or settings; making the video from its first segment");
      return none;
    }
    pipeline::AnimateProgress p;
    p.segments_done = std::stoi(value("segments_done"));
    p.frames = file.read("frames");
    p.tail = file.read("tail");
    // The frames of the finished segments (S2V: clips).
    const int64_t frames = video.frames_of_segments(p.segments_done, temporal_factor);
    const bool fits = p.segments_done >= 1 && p.segments_done < segments &&
                      p.frames.sizes() == at::IntArrayRef({1, frames, video.height, video.width, 3}) &&
                      p.frames.scalar_type() == at::kByte &&
                      p.tail.sizes() == at::IntArrayRef({1, 3, video.carried_frames(), video.height, video.width});
    if (!fits) {
      OMNI_WARN(path, " does not hold what its segments left; making the video from its first segment");
      return none;
    }
    return p;
  } catch (const Error& e) {
    OMNI_WARN(path, " cannot be read (", e.what(), "); making the video from its first segment");
    return none;
  }
}

void write_animate_resume(const std::string& path, const std::string& fingerprint, int segments,
                          const pipeline::AnimateProgress& progress) {
  io::write_safetensors(path, {{"frames", progress.frames}, {"tail", progress.tail}},
                        {{"fingerprint", fingerprint},
                         {"segments", std::to_string(segments)},
                         {"segments_done", std::to_string(progress.segments_done)}});
}

}  // namespace omni::job
