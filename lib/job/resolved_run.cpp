#include "job/resolved_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "dist/agreement.h"
#include "job/default_model.h"

namespace omni::job {

ResolvedModel resolve_model(const std::string& model, const io::ComponentFiles& files,
                            const dist::Communicator& world) {
  ResolvedModel out;
  const bool builtin = model.empty() && files.empty();
  const std::string path = builtin ? ensure_default_model(world) : model;
  dist::run_agreed(world, [&] { out.dir = std::make_shared<const io::ModelDir>(io::ModelDir::open(path, files)); });
  const auto& index = out.dir->index();
  out.preset =
      builtin ? default_model_preset()
              : config::preset_for(model.empty() ? out.dir->root() : model, index.class_name, index.expand_timesteps);
  return out;
}

int ResolvedRun::left() const {
  return static_cast<int>(std::count(written.begin(), written.end(), false));
}

ResolvedRun resolve_run(const config::GenerateOptions& opts, const ResolvedModel& model,
                        const dist::Communicator& world) {
  ResolvedRun run;
  run.model = model.dir;
  dist::run_agreed(world, [&] { run.videos = opts.dry_run ? planned_video_list(opts) : read_video_list(opts); });
  run.written = already_written(run.videos, opts, world);
  // The scheduler reader checks the value's type when the pipeline is built; a non-number is left to it.
  const auto& scheduler = model.dir->component_config("scheduler");
  if (!config::set_by_user(opts, "flow-shift") && scheduler.contains("flow_shift") &&
      scheduler["flow_shift"].is_number()) {
    run.checkpoint.push_back({"flow-shift", scheduler["flow_shift"].get<double>(),
                              "checkpoint " + model.dir->component_config_path("scheduler")});
  }
  if (!config::set_by_user(opts, "boundary-ratio") && model.dir->index().boundary_ratio) {
    run.checkpoint.push_back(
        {"boundary-ratio", *model.dir->index().boundary_ratio, "checkpoint " + model.dir->index_source()});
  }
  return run;
}

}  // namespace omni::job
