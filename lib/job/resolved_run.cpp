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
  config::ModelFacts facts;
  facts.pipeline_class = index.class_name;
  facts.expand_timesteps = index.expand_timesteps;
  facts.experts = static_cast<int>(out.spec->experts.size());
  facts.clip_image = out.spec->experts.front().has_image_branch();
  facts.first_last_frame = out.spec->experts.front().pos_embed_seq_len > 0;
  facts.inner_dim = out.spec->experts.front().inner_dim();
  facts.vace = index.vace;
  facts.animate = index.animate;
  facts.s2v = index.s2v;
  out.preset = builtin ? default_model_preset() : config::preset_for(model.empty() ? out.spec->root() : model, facts);
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
