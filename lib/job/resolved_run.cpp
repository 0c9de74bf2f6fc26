#include "job/resolved_run.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "dist/agreement.h"
#include "job/default_model.h"
#include "job/run_settings.h"

namespace omni::job {

ResolvedModel resolve_model(const std::string& model, const io::ComponentFiles& files,
                            const dist::Communicator& world) {
  ResolvedModel out;
  const bool builtin = model.empty() && files.empty();
  const std::string path = builtin ? ensure_default_model(world) : model;
  dist::run_agreed(world, [&] {
    out.spec = pipeline::read_model_spec(std::make_shared<const io::ModelDir>(io::ModelDir::open(path, files)));
  });
  const auto& index = out.spec->index();
  out.preset =
      builtin ? default_model_preset()
              : config::preset_for(model.empty() ? out.spec->root() : model, index.class_name, index.expand_timesteps);
  return out;
}

int ResolvedRun::left() const {
  return static_cast<int>(std::count(written.begin(), written.end(), false));
}

ResolvedRun resolve_run(const config::GenerateOptions& opts, const ResolvedModel& model,
                        const dist::Communicator& world) {
  ResolvedRun run;
  run.model = model.spec;
  dist::run_agreed(world, [&] {
    run.videos = opts.dry_run ? planned_video_list(opts) : read_video_list(opts);
    run.settings = resolve_settings(opts, *model.spec);
  });
  run.written = already_written(run.videos, opts, world);
  run.checkpoint = checkpoint_settings(run.settings);
  return run;
}

}  // namespace omni::job
