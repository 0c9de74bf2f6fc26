#include "pipeline/auto_layout.h"

#include <algorithm>
#include <limits>

#include "dist/agreement.h"
#include "io/model_dir.h"
#include "models/autoencoder_kl_wan.h"
#include "models/wan_transformer_config.h"
#include "pipeline/default_model.h"
#include "pipeline/video_list.h"

namespace omni::pipeline {

LayoutDecision decide_layout(const config::GenerateOptions& opts, const dist::Communicator& world) {
  LayoutDecision out{opts.parallel, ""};
  std::string given;
  for (const char* key : {"ulysses-degree", "ring-degree", "cfg-parallel-size"})
    if (config::set_by_user(opts, key)) given += str_cat(given.empty() ? "--" : ", --", key);
  if (opts.layout == "manual") {
    out.line = "manual (--layout manual)";
    return out;
  }
  if (!given.empty()) {
    out.line = "manual: " + given + " given";
    return out;
  }

  const std::string model = opts.model.empty() ? ensure_default_model(world) : opts.model;
  config::LayoutWork work;
  dist::run_agreed(world, [&] {
    const auto dir = io::ModelDir::open(model);
    const auto tc = models::WanTransformerConfig::load(dir.component_dir("transformer"));
    const auto vae = models::WanVaeConfig::from_file(dir.component_config_path("vae"));
    const auto videos = planned_video_list(opts);
    work.videos = static_cast<int>(videos.size());
    work.heads = static_cast<int>(tc.num_attention_heads);
    work.min_tokens = std::numeric_limits<int64_t>::max();
    for (const auto& v : videos) {
      const auto& o = v.opts;
      work.guidance = work.guidance || o.guidance_scale > 1.0;  // the pipeline's do_cfg
      // Tokens at the requested size (an image-derived size keeps about the same area).
      const int64_t tf = vae.scale_factor_temporal, sf = vae.scale_factor_spatial;
      const int64_t frames = (o.num_frames - 1) / tf + 1;
      const int64_t tokens =
          frames / tc.patch_size[0] * (o.height / sf / tc.patch_size[1]) * (o.width / sf / tc.patch_size[2]);
      work.min_tokens = std::min(work.min_tokens, tokens);
    }
  });
  out.parallel = config::choose_parallel(opts.parallel, world.size(), work, &out.line);
  out.automatic = true;
  return out;
}

}  // namespace omni::pipeline
