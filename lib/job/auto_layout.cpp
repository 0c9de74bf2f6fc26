#include "job/auto_layout.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "dist/topology.h"

namespace omni::job {

LayoutDecision decide_layout(const config::GenerateOptions& opts, const ResolvedRun& run,
                             const dist::Communicator& world) {
  LayoutDecision out{opts.parallel, ""};
  std::string given;
  for (const char* key : {"ulysses-degree", "ring-degree", "cfg-parallel-size"})
    if (config::set_by_user(opts, key)) given += str_cat(given.empty() ? "--" : ", --", key);
  if (opts.layout == config::LayoutMode::kManual) {
    out.line = "manual (--layout manual)";
    return out;
  }
  if (!given.empty()) {
    out.line = "manual: " + given + " given";
    return out;
  }

  const models::WanTransformerConfig& tc = run.model->experts.at(0);
  const int64_t tf = run.model->vae.scale_factor_temporal, sf = run.model->vae.scale_factor_spatial;
  // A resumed list is laid out for the videos it has left (a requeued job with one video left puts every rank
  // on it).
  const std::vector<VideoSpec>& videos = run.videos;
  const std::vector<bool>& done = run.written;
  const int left = run.left();
  dist::LayoutWork work;
  work.videos = left > 0 ? left : static_cast<int>(videos.size());
  work.heads = static_cast<int>(tc.num_attention_heads);
  work.min_tokens = std::numeric_limits<int64_t>::max();
  for (size_t i = 0; i < videos.size(); ++i) {
    if (done[i] && left > 0) continue;
    const pipeline::VideoParams v = videos[i].params();
    work.guidance = work.guidance || v.guidance_on();
    // Tokens at the requested size (an image-derived size keeps about the same area).
    work.min_tokens =
        std::min(work.min_tokens, tc.token_count(v.denoised_latent_frames(tf), v.height / sf, v.width / sf));
  }
  // The nodes (a collective, as the mesh's own discovery later): Ulysses is kept inside one.
  const dist::Topology topology = dist::Topology::discover(world);
  if (topology.nodes() > 1) {
    for (int n = 0; n < topology.nodes(); ++n)
      work.node_ranks = std::gcd(work.node_ranks, static_cast<int>(topology.ranks_of(n).size()));
  }
  out.parallel = dist::choose_parallel(opts.parallel, world.size(), work, &out.line);
  if (left > 0 && left < static_cast<int>(videos.size()))
    out.line += str_cat(" (", videos.size() - static_cast<size_t>(left), " of ", videos.size(), " already written)");
  out.automatic = true;
  return out;
}

}  // namespace omni::job
