#include "job/memory_check.h"

#include <algorithm>
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
  const auto& l = mesh.layout();
  pipeline::RankWork w;
  const int position = mesh.position_of(rank);  // the layout's coordinates are the rank's position
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
    budget_ = {target.gpu.memory_bytes, str_cat("--plan-for ", target.describe())};
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
