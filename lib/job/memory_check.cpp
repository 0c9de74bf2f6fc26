#include "job/memory_check.h"

#include <algorithm>
#include <limits>
#include <sstream>

#include "core/docs_links.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/memory.h"
#include "dist/agreement.h"
#include "dist/gpu_table.h"

namespace omni::job {
namespace {

pipeline::MemoryPlanSettings plan_settings(const pipeline::PipelineSettings& settings,
                                           const config::GenerateOptions& run, const dist::Layout& l) {
  pipeline::MemoryPlanSettings ps;
  ps.run = settings;
  ps.cuda = dist::runs_on_cuda(run.device) || !run.plan_for.empty();  // --plan-for: as on its GPU
  ps.shard = l.use_hsdp ? l.hsdp_shard : 1;
  ps.ulysses = l.ulysses;
  ps.ring = l.ring;
  ps.cfg = l.cfg;
  return ps;
}

}  // namespace

pipeline::RankWork rank_work(const VideoQueue& queue, const dist::DeviceMesh& mesh, int rank, bool vae_parallel) {
  return rank_work_at(queue, mesh.layout(), mesh.position_of(rank), vae_parallel);  // the layout's coordinates
}

pipeline::RankWork rank_work_at(const VideoQueue& queue, const dist::Layout& l, int position, bool vae_parallel) {
  pipeline::RankWork w;
  w.gathers_video = l.writes_video(position);
  w.decode_group = vae_parallel ? l.video_size() : 1;
  for (const auto& a : queue.assignments_of(l.dp_index(position), l.dp)) {
    pipeline::PlannedVideo v;
    v.video = queue.video(a.video).params();
    v.decoded = a.real && (w.gathers_video || w.decode_group > 1);
    w.videos.push_back(v);
  }
  return w;
}

namespace {

// The time plan of `video` on each rank from its traffic split (the shard group's figure is HSDP's gathers, one
// per step; the other kinds the step's exchanges), the slowest rank's.
pipeline::TimePlan slowest_time_plan(const pipeline::StepWork& work, const pipeline::VideoParams& video,
                                     const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic,
                                     int decode_group, const pipeline::DeviceRates& rates, double* most_inter) {
  pipeline::TimePlan slowest;
  bool first = true;
  for (const auto& rank : traffic) {
    pipeline::StepBytes bytes;
    for (const auto& s : rank) {
      if (s.kind == dist::GroupKind::kShard) {
        bytes.gather += static_cast<double>(s.intra_node + s.inter_node);
      } else {
        bytes.intra_node += static_cast<double>(s.intra_node);
        bytes.inter_node += static_cast<double>(s.inter_node);
        if (s.kind == dist::GroupKind::kRing) bytes.ring += static_cast<double>(s.intra_node);
      }
    }
    const auto t = pipeline::plan_time(work, video, bytes, decode_group, rates);
    const double inter = bytes.inter_node;
    if (first || t.video_seconds > slowest.video_seconds) slowest = t;
    first = false;
    if (most_inter) *most_inter = std::max(*most_inter, inter);
  }
  return slowest;
}

}  // namespace

int64_t fewest_latent_rows(const VideoQueue& queue, const pipeline::ModelSpec& model, int* height) {
  int64_t rows = std::numeric_limits<int64_t>::max();
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) {
    const int h = queue.video(i).params().height;
    if (h / model.vae.scale_factor_spatial < rows) rows = h / model.vae.scale_factor_spatial, *height = h;
  }
  return rows;
}

std::vector<LayoutOption> layout_options(const pipeline::ModelSpec& model, const pipeline::PipelineSettings& settings,
                                         const config::GenerateOptions& run, int world, const VideoQueue& queue,
                                         const pipeline::DeviceRates& rates, const std::vector<int>& node_of,
                                         int64_t budget) {
  const pipeline::VideoParams video = queue.largest_video();
  bool guidance = false;
  for (int i = 0; i < static_cast<int>(queue.size()); ++i) guidance = guidance || queue.video(i).params().guidance_on();
  int height = 0;
  const int64_t rows = fewest_latent_rows(queue, model, &height);  // --vae-parallel's bands
  const int64_t heads = model.experts.at(0).num_attention_heads;
  std::vector<LayoutOption> out;
  for (int cfg = 1; cfg <= (guidance ? 2 : 1); ++cfg)
    for (int ring = 1; ring <= world; ++ring)
      for (int ulysses = 1; ulysses <= world; ++ulysses) {
        if (world % (cfg * ring * ulysses) != 0 || heads % ulysses != 0) continue;
        dist::ParallelConfig pc = run.parallel;
        pc.cfg_parallel_size = cfg;
        pc.ring_degree = ring;
        pc.ulysses_degree = ulysses;
        LayoutOption o;
        try {
          o.layout = dist::resolve_layout(pc, world);
        } catch (const Error&) {
          continue;  // not a layout of this world with the run's HSDP
        }
        const dist::Layout& l = o.layout;
        const pipeline::MemoryPlanner planner(model, plan_settings(settings, run, l));
        auto peak_with = [&](bool vae_parallel) {
          int64_t peak = 0;
          for (int p = 0; p < world; ++p)
            peak = std::max(peak, planner.plan(rank_work_at(queue, l, p, vae_parallel)).peak_bytes());
          return peak;
        };
        o.peak_bytes = peak_with(run.vae_parallel);
        if (!run.vae_parallel && !run.no_vae_parallel && l.video_size() > 1 && rows >= l.video_size()) {
          const int64_t banded = peak_with(true);
          if (banded < o.peak_bytes) o.peak_bytes = banded, o.vae_parallel = true;
        }
        o.vae_parallel = o.vae_parallel || run.vae_parallel;
        // Each rank's step traffic, split by where its group's peers sit (a layout's positions are its ranks
        // before the mesh places them).
        const std::vector<int> nodes = node_of.empty() ? std::vector<int>(static_cast<size_t>(world), 0) : node_of;
        const auto traffic = pipeline::split_step_traffic(planner.step_traffic(video), nodes,
                                                          [&](dist::GroupKind kind) { return l.groups(kind); });
        o.time = slowest_time_plan(planner.step_work(video), video, traffic, o.vae_parallel ? l.video_size() : 1, rates,
                                   &o.inter_node_bytes);
        const int pending = queue.count(VideoStatus::kPending);
        const int64_t videos = pending > 0 ? pending : static_cast<int64_t>(queue.size());
        const double rounds = static_cast<double>((videos + l.dp - 1) / l.dp);
        o.job_seconds = rounds * o.time.video_seconds;
        pipeline::DeviceRates work_rates = rates;
        work_rates.block_seconds = work_rates.collective_seconds = 0;
        o.work_seconds = rounds * slowest_time_plan(planner.step_work(video), video, traffic,
                                                    o.vae_parallel ? l.video_size() : 1, work_rates, nullptr)
                                      .video_seconds;
        o.idle_groups = l.dp > videos;
        out.push_back(o);
      }
  std::stable_sort(out.begin(), out.end(), [&](const LayoutOption& a, const LayoutOption& b) {
    const bool fa = a.peak_bytes <= budget, fb = b.peak_bytes <= budget;
    if (fa != fb) return fa;
    if (a.job_seconds != b.job_seconds) return a.job_seconds < b.job_seconds;
    return a.inter_node_bytes < b.inter_node_bytes;
  });
  return out;
}

std::string degrees_of(const dist::Layout& l) {
  return str_cat("dp ", l.dp, " x cfg ", l.cfg, " x ring ", l.ring, " x ulysses ", l.ulysses);
}

std::optional<pipeline::DeviceRates> run_rates(const config::GenerateOptions& run, const pipeline::ModelSpec& model,
                                               const pipeline::VideoParams& largest, const dist::MemoryBudget& budget,
                                               const dist::Communicator& world) {
  std::optional<pipeline::DeviceRates> rates;
  if (!run.plan_for.empty()) {
    rates = pipeline::rates_of(dist::parse_plan_for(run.plan_for).gpu);
  } else if (dist::runs_on_cuda(run.device)) {
    if (const dist::GpuProfile* gpu = dist::gpu_by_cuda_name(budget.product)) rates = pipeline::rates_of(*gpu);
  } else {
    const models::WanTransformerConfig& tc = model.experts.at(0);
    pipeline::CpuProbe probe;
    const int64_t tf = model.vae.scale_factor_temporal, sf = model.vae.scale_factor_spatial;
    probe.tokens = tc.token_count(largest.denoised_latent_frames(tf), largest.height / sf, largest.width / sf) /
                   std::max(world.size(), 1);
    probe.dim = tc.inner_dim();
    probe.ffn = tc.ffn_dim;
    probe.heads = tc.num_attention_heads;
    probe.dtype = run.dtype;
    probe.vae_dim = model.vae.decoder_base_dim.value_or(model.vae.base_dim);
    rates = pipeline::measure_cpu_rates(probe, world);
  }
  if (rates && !run.calibration.empty()) rates = pipeline::calibrate(*rates, run.calibration);
  return rates;
}

pipeline::TimePlan predicted_time(const MemoryCheck& memory, const VideoQueue& queue,
                                  const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic, int decode_group,
                                  const pipeline::DeviceRates& rates) {
  const pipeline::VideoParams video = queue.largest_video();
  return slowest_time_plan(memory.step_work(video), video, traffic, decode_group, rates, nullptr);
}

TimeReport time_report(const MemoryCheck& memory, const VideoQueue& queue,
                       const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic, int decode_group,
                       const pipeline::DeviceRates& rates, const std::vector<LayoutOption>& options,
                       const dist::Layout& layout) {
  TimeReport out;
  const pipeline::TimePlan slowest = predicted_time(memory, queue, traffic, decode_group, rates);
  out.text = str_cat("time plan (estimate, the slowest rank; ", rates.source, "):\n  ", slowest.describe());
  out.json = slowest.to_json();
  out.json["rates"] = rates.source;
  // Every layout of this world by the same plans: what explicit degrees would give instead.
  out.text += "\nlayouts by the plans (the job: the busiest data-parallel group's videos; * this run's):";
  nlohmann::json list = nlohmann::json::array();
  for (size_t i = 0; i < options.size(); ++i) {
    const auto& o = options[i];
    const dist::Layout& l = o.layout;
    const bool this_run = l.cfg == layout.cfg && l.ring == layout.ring && l.ulysses == layout.ulysses;
    const bool fits = o.peak_bytes <= memory.budget().bytes;
    const std::string degrees = degrees_of(l);
    list.push_back({{"layout", degrees},
                    {"this_run", this_run},
                    {"peak_bytes", o.peak_bytes},
                    {"fits", fits},
                    {"vae_parallel", o.vae_parallel},
                    {"video_seconds", o.time.video_seconds},
                    {"job_seconds", o.job_seconds},
                    {"step_inter_node_bytes", o.inter_node_bytes}});
    if (i < 8 || this_run)
      out.text +=
          str_cat("\n  ", this_run ? "* " : "  ", degrees, ": job ", static_cast<int64_t>(o.job_seconds + 0.5), " s (",
                  static_cast<int64_t>(o.time.video_seconds + 0.5), " s per video), peak ", format_bytes(o.peak_bytes),
                  fits ? "" : " (does not fit)", o.vae_parallel ? ", --vae-parallel" : "");
  }
  out.json["layouts"] = list;
  return out;
}

MemoryCheck::MemoryCheck(const pipeline::ModelSpec& model, const pipeline::PipelineSettings& settings,
                         const config::GenerateOptions& run, const dist::Layout& layout)
    : run_(run), layout_(layout), planner_(model, plan_settings(settings, run, layout)) {}

void MemoryCheck::plan(const std::vector<pipeline::RankWork>& work) {
  plans_.clear();
  for (const auto& w : work) plans_.push_back(planner_.plan(w));
}

std::string memory_advice(const pipeline::MemoryPlan& plan, const config::GenerateOptions& run, const dist::Layout& l) {
  const bool float32 = run.dtype == c10::ScalarType::Float;
  std::string shard = l.use_hsdp ? str_cat("a larger --hsdp-shard-size (now ", l.hsdp_shard, ", more ranks per copy)")
                                 : "--use-hsdp with --hsdp-shard-size N (each rank holds 1/N of the weights)";
  switch (plan.largest_part().kind) {
    case pipeline::MemoryKind::kWeights:
      return shard + (float32 ? ", or --dtype bfloat16" : "");
    case pipeline::MemoryKind::kGatheredUnits:
      return float32 ? "--dtype bfloat16 (a gathered block is whole on every rank)" : shard;
    case pipeline::MemoryKind::kVaeWeights:
      return run.vae_dtype == c10::ScalarType::Float ? "--vae-dtype bfloat16" : "a smaller VAE dtype";
    case pipeline::MemoryKind::kDecode:
      return str_cat(run.vae_parallel || l.video_size() == 1 ? "" : "--vae-parallel, or ",
                     "a lower --height / --width or fewer --num-frames");
    case pipeline::MemoryKind::kOther:
      break;
  }
  return str_cat("a lower --height / --width or fewer --num-frames",
                 l.ring * l.ulysses < l.world_size ? ", or more --ulysses-degree / --ring-degree ranks" : "");
}

void MemoryCheck::check(const dist::DeviceMesh& mesh) {
  const dist::Communicator& world = mesh.world();
  if (run_.plan_for.empty()) {
    budget_ = dist::memory_budget(run_.device, world);  // collective (node ranks)
  } else {
    const dist::PlanTarget target = dist::parse_plan_for(run_.plan_for);  // every rank alike: no collective
    budget_ = {target.gpu.memory_bytes, str_cat("--plan-for ", target.describe()), ""};
  }
  const pipeline::MemoryPlan& mine = plans_[static_cast<size_t>(world.rank())];
  OMNI_DEBUG("memory plan of rank ", world.rank(), ": ", mine.summary());
  if (world.rank() == 0) OMNI_INFO("memory plan (rank 0): ", mine.summary());
  // The rank whose plan exceeds its memory the most says so for the job.
  const auto [excess, worst] =
      world.max_location(budget_.bytes > 0 ? static_cast<double>(mine.peak_bytes() - budget_.bytes) : -1.0);
  if (excess <= 0) return;
  std::string line;
  if (world.rank() == worst) {
    line = str_cat("memory plan: rank ", world.rank(), " needs ", format_bytes(mine.peak_bytes()), " at its ",
                   mine.peak_phase().name, " peak, more than ", budget_.what, " (", format_bytes(budget_.bytes),
                   " for this rank); largest part: ", mine.largest_part().name, " ",
                   format_bytes(mine.largest_part().bytes), "; to fit: ", memory_advice(mine, run_, layout_), " (",
                   docs::kDoesNotFit, ")");
  }
  line = world.broadcast(line, worst);
  if (run_.strict_memory) dist::run_agreed(world, [&] { OMNI_FAIL_USAGE(line, " (--strict-memory)"); });
  if (world.rank() == 0) OMNI_WARN(line, " (--strict-memory makes this an error)");
}

std::string MemoryCheck::describe(const std::function<bool(int)>& writes_video) const {
  const bool cuda = dist::runs_on_cuda(run_.device) || !run_.plan_for.empty();
  std::ostringstream os;
  const bool f8_transformer = run_.weight_format == config::WeightFormat::kFloat8;
  const bool f8_text = run_.text_encoder_weight_format == config::WeightFormat::kFloat8;
  const std::string float8 = f8_transformer || f8_text
                                 ? str_cat(" (float8_e4m3fn Linear weights of the ",
                                           f8_transformer && f8_text ? "transformers and UMT5"
                                           : f8_transformer          ? "transformers"
                                                                     : "UMT5",
                                           ": --fp8-layers ", config::name_of(run_.fp8_layers), ")")
                                 : std::string();
  os << "memory plan per rank (" << (cuda ? "GPU memory allocated" : "host memory above the process's start-up") << ", "
     << dtype_name(run_.dtype) << " weights" << float8 << ", " << plans_[0].attention_kernel
     << " attention; from configs and checkpoint headers):\n";
  for (size_t r = 0; r < plans_.size(); ++r) {
    const pipeline::MemoryPlan& p = plans_[r];
    int same = -1;
    for (size_t q = 0; q < r && same < 0; ++q)
      if (plans_[q].to_json() == p.to_json()) same = static_cast<int>(q);
    if (same >= 0) {
      os << "  rank " << r << ": as rank " << same << "\n";
      continue;
    }
    os << "  rank " << r << (writes_video(static_cast<int>(r)) ? " (writes videos)" : "") << ": peak "
       << format_bytes(p.peak_bytes()) << " at " << p.peak_phase().name << "\n";
    for (const auto& phase : p.phases) {
      os << "    " << phase.name << " " << format_bytes(phase.bytes()) << ":";
      bool first = true;
      for (const auto& part : phase.parts) {
        os << (first ? " " : ", ") << part.name << " " << format_bytes(part.bytes);
        first = false;
      }
      os << "\n";
    }
  }
  if (budget_.bytes > 0) {
    int64_t peak = 0;
    for (const auto& p : plans_) peak = std::max(peak, p.peak_bytes());
    os << "memory available per rank (rank 0): " << format_bytes(budget_.bytes) << " (" << budget_.what << "); "
       << (peak <= budget_.bytes ? "the plan fits" : "the plan does NOT fit") << "\n";
  }
  return os.str();
}

}  // namespace omni::job
