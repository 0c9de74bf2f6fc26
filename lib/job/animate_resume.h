// Wan2.2-Animate's resume file: after each segment but the last, the writing rank keeps the finished frames and
// the last decoded frames the next segment starts from, in one file beside the output (OUTPUT.segments.safetensors,
// written atomically). A run started again with the same inputs and settings resumes at the first unfinished
// segment and makes the same frames; the file goes once the video is written. A file made with other inputs or
// settings (its fingerprint differs), or one that cannot be read, is set aside with a warning and the video made
// from its start.
#pragma once

#include <string>

#include "config/options.h"
#include "job/output_writer.h"
#include "pipeline/wan_pipeline.h"

namespace omni::job {

std::string animate_resume_path(const std::string& output);

// What decides a video's frames, hashed: every setting but those that only place the work or format the output
// (layout, device, logging, the MP4's encoding), the settings the checkpoint decided, the model's files and the
// input files' SHA-256.
std::string animate_fingerprint(const config::GenerateOptions& o, const RunIdentity& run);

// The progress kept at `path` for a video of `segments` segments of `video`'s shape (none: segments_done 0).
pipeline::AnimateProgress read_animate_resume(const std::string& path, const std::string& fingerprint, int segments,
                                              const pipeline::VideoParams& video, int temporal_factor);

void write_animate_resume(const std::string& path, const std::string& fingerprint, int segments,
                          const pipeline::AnimateProgress& progress);

}  // namespace omni::job
