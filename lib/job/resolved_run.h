// What a run works on, resolved once before the layout is chosen (docs/DESIGN.md section 2): the model folder
// (the built-in default model generated first when no --model is given) with its model_index.json and the preset
// that fits it; then, once the options are resolved, the video list and which of its videos earlier runs wrote
// (resume), and the pipeline's settings. The layout choice (auto_layout) and the job (GenerationJob) both consume
// it; nothing is read twice.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/communicator.h"
#include "io/model_dir.h"
#include "job/video_list.h"
#include "pipeline/model_spec.h"
#include "pipeline/pipeline_settings.h"
#include "pipeline/time_plan.h"

namespace omni::job {

struct ResolvedModel {
  std::shared_ptr<const pipeline::ModelSpec> spec;  // its files and typed configs, read once
  std::string preset;                               // the preset that fits it (configs/*.yaml)
};

// Opens --model (`model`, as given; "" for the built-in default model, which rank 0 generates once when
// missing, unless component files are given) and chooses its preset from its name and model_index.json. Agreed over
// `world`: a bad model is one error, exit 3, on every rank. `files`: single component files (--transformer, ...)
// replacing the folder's or, without --model, the whole model.
ResolvedModel resolve_model(const std::string& model, const io::ComponentFiles& files, const dist::Communicator& world);

struct ResolvedRun {
  std::shared_ptr<const pipeline::ModelSpec> model;
  std::vector<VideoSpec> videos;  // the prompt, or the prompts file's lines (a dry run may have no prompt)
  std::vector<bool> written;      // per video: already written by an earlier run (rank 0's view, for all)
  // The pipeline's settings, resolved once from the options and the model (job/run_settings.h); the device is
  // set at load.
  pipeline::PipelineSettings settings;
  // The checkpoint's own flow_shift (scheduler_config.json) and boundary_ratio (model_index.json) where the
  // user gave none (flag, --config, prompts-file line): diffusers runs them, so they win over the preset's.
  std::vector<config::ResolvedSetting> checkpoint;
  // The time plan's rates where the layout choice measured or looked them up (job/auto_layout.h), else none.
  std::optional<pipeline::DeviceRates> rates;
  int left() const;  // videos not written
};

// The video list of `opts` (read_video_list; for a dry run planned_video_list) and rank 0's view of which of its
// outputs exist (resume: a prompts-file run without --overwrite). Agreed over `world`.
ResolvedRun resolve_run(const config::GenerateOptions& opts, const ResolvedModel& model,
                        const dist::Communicator& world);

}  // namespace omni::job
