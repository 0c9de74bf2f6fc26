#include "job/auto_layout.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/log.h"
#include "dist/agreement.h"
#include "dist/topology.h"
#include "job/memory_check.h"
#include "job/video_queue.h"

namespace omni::job {

const LayoutOption* faster_than_rules(const std::vector<LayoutOption>& options, const LayoutOption* rules,
                                      int64_t budget) {
  if (options.empty()) return nullptr;
  auto fits = [&](const LayoutOption& o) { return budget <= 0 || o.peak_bytes <= budget; };
  const LayoutOption* best = nullptr;  // the fastest that fits; on a tie the least traffic across nodes
  for (const auto& o : options)
    if (fits(o) && !o.idle_groups &&
        (best == nullptr || o.work_seconds < best->work_seconds ||
         (o.work_seconds == best->work_seconds && o.inter_node_bytes < best->inter_node_bytes)))
      best = &o;
  if (best == nullptr || best == rules) return nullptr;
  if (rules != nullptr && fits(*rules) && best->work_seconds >= (1 - kTimeMargin) * rules->work_seconds) return nullptr;
  return best;
}

namespace {

// The rules' choice in `out` against every layout by the time plan (auto_layout.h).
void weigh_by_time(const config::GenerateOptions& opts, const ResolvedRun& run, const dist::Communicator& world,
                   const dist::Topology& topology, LayoutDecision& out) {
  // A resumed list: the videos it has left (all of them when none is: they are made again).
  std::vector<bool> skipped(run.written.size());
  for (size_t i = 0; i < skipped.size(); ++i) skipped[i] = run.written[i] && run.left() > 0;
  const VideoQueue queue(run.videos, skipped);
  if (queue.count(VideoStatus::kPending) == 0) return;
  dist::MemoryBudget budget;
  if (opts.plan_for.empty()) {
    budget = dist::memory_budget(opts.device, world);  // collective (node ranks)
  } else {
    const dist::PlanTarget target = dist::parse_plan_for(opts.plan_for);
    budget = {target.gpu.memory_bytes, target.describe(), ""};
  }
  dist::run_agreed(world, [&] { out.rates = run_rates(opts, *run.model, queue.largest_video(), budget, world); });
  if (!out.rates) return;
  std::vector<int> node_of = topology.node_of;
  if (!opts.plan_for.empty()) {  // the dry run's --plan-for GPUxN: the ranks on nodes of N
    const int per_node = dist::parse_plan_for(opts.plan_for).per_node;
    for (int r = 0; r < world.size(); ++r) node_of[static_cast<size_t>(r)] = per_node > 0 ? r / per_node : 0;
  }
  // The plans read the checkpoints' headers: a bad one is one agreed error (exit 3), as the job's own plan.
  std::vector<LayoutOption> options;
  dist::run_agreed(world, [&] {
    options = layout_options(*run.model, run.settings, opts, world.size(), queue, *out.rates, node_of, budget.bytes);
  });
  const LayoutOption* rules = nullptr;
  for (const auto& o : options)
    if (o.layout.cfg == out.parallel.cfg_parallel_size && o.layout.ring == out.parallel.ring_degree &&
        o.layout.ulysses == out.parallel.ulysses_degree)
      rules = &o;
  const LayoutOption* faster = faster_than_rules(options, rules, budget.bytes);
  if (faster == nullptr) return;
  const LayoutOption& best = *faster;
  const bool rules_fit = budget.bytes <= 0 || rules == nullptr || rules->peak_bytes <= budget.bytes;
  out.parallel.cfg_parallel_size = best.layout.cfg;
  out.parallel.ring_degree = best.layout.ring;
  out.parallel.ulysses_degree = best.layout.ulysses;
  char figures[160];
  if (rules)
    std::snprintf(figures, sizeof(figures), " (%.3g s of work for the job; the rules' %s: %.3g s%s)", best.work_seconds,
                  degrees_of(rules->layout).c_str(), rules->work_seconds, rules_fit ? "" : ", does not fit");
  else
    std::snprintf(figures, sizeof(figures), " (%.3g s of work for the job)", best.work_seconds);
  out.line = str_cat("auto by the time plan: ", degrees_of(best.layout), figures);
}

}  // namespace

LayoutDecision decide_layout(const config::GenerateOptions& opts, const ResolvedRun& run,
                             const dist::Communicator& world) {
  LayoutDecision out;
  out.parallel = opts.parallel;
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
  if (world.size() > 1) weigh_by_time(opts, run, world, topology, out);
  return out;
}

}  // namespace omni::job
