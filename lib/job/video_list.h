// The videos of one run: the one --prompt, or the lines of --prompts-file, each resolved to its own options.
//
// A prompts file is plain text (one prompt per line; blank lines and lines starting with # are skipped) or,
// when its name ends in .jsonl, JSON Lines: one object per line,
//   {"prompt": "...", "negative_prompt": "...", "seed": 7, "image": "a.png", "last_image": "b.png", "output": "a.mp4",
//   "num_frames": 33}
// whose keys (snake_case or the flags' kebab-case) override the run's options for that video only (a key whose
// value is null is not given: the run's value). Only the
// options that keep data-parallel groups in lockstep may vary per video (prompts, seed, image, output, sizes,
// guidance scales on the same side of 1, fps, crf): groups that share HSDP shards must run the same sequence
// of gathers, so the step count, solver, shifts, boundary and anything loaded with the model are the run's.
// Anything else is a usage error naming the file and the line, before any model is read.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/communicator.h"
#include "io/audio_reader.h"
#include "pipeline/video_params.h"

namespace omni::job {

struct VideoSpec {
  config::GenerateOptions opts;  // the run's options with this video's own values on top
  int line = 0;                  // 1-based line of the prompts file; 0 for --prompt
  std::string origin;            // "prompts file x.jsonl line 3" (empty for --prompt), to prefix messages
  std::string output;            // the MP4 path
  std::string tensors_path;      // --save-tensors path for this video, or ""
  std::string dump_path;         // --dump-tensors path for this video, or ""

  // Its sampling, as the pipeline, the memory plan and the layout choice read it.
  pipeline::VideoParams params() const;
};

// A video's sampling from its options.
pipeline::VideoParams video_params(const config::GenerateOptions& opts);
// Wan2.2-S2V: the recording's span (--audio-start, --audio-duration).
io::AudioSpan speech_span(const config::GenerateOptions& opts);

// The options a JSON Lines object may set, in the flags' names.
const std::vector<std::string>& per_video_options();

// Reads the videos of a run (`run` resolved from defaults, preset, config and flags). Outputs not named by a
// line are --output numbered by position ("out.mp4" -> "out-0000.mp4", ...; one video keeps the name); two
// videos writing one path is an error naming both lines.
std::vector<VideoSpec> read_video_list(const config::GenerateOptions& run);
// --animate-inputs DIR: the files Wan2.2's preprocess_data.py writes there, for the Animate flags not given
// (--pose-video, --face-video, --image; replace mode --background-video, --mask-video). A usage error names a
// missing file.
void expand_animate_inputs(config::GenerateOptions& o);

// For planning before a run (the layout choice, --dry-run): read_video_list, or without any prompt one video
// of the run's settings (the prompt's text changes neither layout nor memory).
std::vector<VideoSpec> planned_video_list(const config::GenerateOptions& run);

// Resume (docs/DESIGN.md section 9): which videos a prompts-file run finds already written (their MP4 exists;
// never without --prompts-file or with --overwrite). Rank 0 looks, every rank of `world` gets its answer (one
// view of the filesystem). Collective.
std::vector<bool> already_written(const std::vector<VideoSpec>& videos, const config::GenerateOptions& run,
                                  const dist::Communicator& world);

// "cat.mp4", 3 prompts -> "cat-0000.mp4", "cat-0001.mp4", "cat-0002.mp4"; one prompt keeps the path.
std::string indexed_path(const std::string& path, int index, int count);

// Runs `fn`; an omni::Error it throws comes back with `origin` prefixed ("prompts file x line 3: ..."),
// its exit code kept.
void with_origin(const std::string& origin, const std::function<void()>& fn);

}  // namespace omni::job
