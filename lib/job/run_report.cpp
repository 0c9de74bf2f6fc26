#include "job/run_report.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/dtype.h"
#include "core/log.h"
#include "core/memory.h"
#include "dist/gpu_table.h"
#include "dist/topology.h"

namespace omni::job {

void RankStats::add_video(const PhaseTimes& times, int64_t vae_peak, int64_t denoise_peak, int64_t gathered_per_step,
                          bool real) {
  gathered_bytes_per_step = gathered_per_step;
  vae_peak_bytes = std::max(vae_peak_bytes, vae_peak);
  denoise_peak_bytes = std::max(denoise_peak_bytes, denoise_peak);
  if (real) {
    ++videos;
    text_encode_seconds += times.get("text_encode") + times.get("image_encode");
    compute_seconds +=
        times.get("text_encode") + times.get("image_encode") + times.get("denoise") + times.get("decode");
  }
}

void RankStats::set_step_seconds(std::vector<double> steps) {
  step_seconds = pipeline::median(std::move(steps));
}

nlohmann::json time_measured(const pipeline::TimePlan& predicted, const pipeline::DeviceRates& rates,
                             const std::vector<RankStats>& ranks) {
  double step = 0, text = 0, decode = 0;
  for (const RankStats& r : ranks) {
    step = std::max(step, r.step_seconds);
    if (r.videos > 0) {
      text = std::max(text, r.text_encode_seconds / r.videos);
      decode = std::max(decode, r.decode_seconds / r.videos);
    }
  }
  nlohmann::json j = {{"rates", rates.source}, {"predicted", predicted.to_json()}};
  if (step > 0) {
    j["measured"] = {{"step_seconds", step},
                     {"text_encode_seconds", text},
                     {"decode_seconds", decode},
                     {"video_seconds", text + predicted.steps * step + decode}};
    j["step_ratio"] = step / predicted.step_seconds;  // measured / predicted
  }
  return j;
}

void RankStats::add_host_reads(const std::vector<int64_t>& per_step) {
  for (int64_t n : per_step) {
    host_reads_denoise = std::max<int64_t>(host_reads_denoise, 0) + n;
    host_reads_max_step = std::max(host_reads_max_step, n);
  }
}

void RankStats::set_end_of_run(const hsdp::HsdpStats* hsdp, int64_t disk_bytes_read, const c10::Device& device,
                               const PhaseTimes& times) {
  if (hsdp) {
    param_bytes_resident = hsdp->param_bytes_resident;
    gathered_bytes_peak = hsdp->gathered_bytes_peak;
    gather_wait_seconds = hsdp->gather_wait_seconds;
  }
  this->disk_bytes_read = disk_bytes_read;
  peak_rss_bytes = omni::peak_rss_bytes();
  peak_device_bytes = dist::peak_device_bytes(device);
  decode_seconds = times.get("decode");
  set_run_traffic(dist::traffic_totals());
}

void RankStats::set_run_traffic(const dist::TrafficByKind& totals) {
  for (int k = 0; k < kKinds; ++k) {
    sent_intra_node[k] = totals[static_cast<size_t>(k)].intra_node_bytes;
    sent_inter_node[k] = totals[static_cast<size_t>(k)].inter_node_bytes;
    collectives[k] = totals[static_cast<size_t>(k)].collectives;
  }
}

void RankStats::set_step_traffic(const dist::TrafficByKind& now, const dist::TrafficByKind& before) {
  for (int k = 0; k < kKinds; ++k) {
    const auto i = static_cast<size_t>(k);
    step_sent_intra_node[k] = now[i].intra_node_bytes - before[i].intra_node_bytes;
    step_sent_inter_node[k] = now[i].inter_node_bytes - before[i].inter_node_bytes;
  }
}

nlohmann::json RankStats::to_json(bool cuda) const {
  nlohmann::json j = {{"param_bytes_resident", param_bytes_resident},
                      {"gathered_bytes_peak", gathered_bytes_peak},
                      {"disk_bytes_read", disk_bytes_read},
                      {"gathered_bytes_per_step", gathered_bytes_per_step},
                      {"gather_wait_seconds", gather_wait_seconds},
                      {"peak_rss_bytes", peak_rss_bytes},
                      {"peak_device_bytes", peak_device_bytes},
                      {"load_peak_rss_bytes", load_peak_rss_bytes},
                      {"load_peak_device_bytes", load_peak_device_bytes},
                      {"vae_peak_bytes", vae_peak_bytes},
                      {"denoise_peak_bytes", denoise_peak_bytes},
                      {"decode_seconds", decode_seconds},
                      {"step_seconds", step_seconds},
                      {"baseline_rss_bytes", baseline_rss_bytes},
                      {"compute_seconds", compute_seconds}};
  if (cuda) j["cuda_peak_allocated_bytes"] = peak_device_bytes;
  if (step_cache_held_bytes > 0) j["step_cache_held_bytes"] = step_cache_held_bytes;
  if (host_reads_denoise >= 0)
    j["host_reads"] = {{"denoise", host_reads_denoise}, {"max_per_step", host_reads_max_step}};
  nlohmann::json traffic = nlohmann::json::object();
  for (int k = 0; k < kKinds; ++k) {
    if (collectives[k] == 0) continue;
    traffic[dist::name_of(dist::group_kinds()[static_cast<size_t>(k)])] = {
        {"collectives", collectives[k]},
        {"sent_intra_node_bytes", sent_intra_node[k]},
        {"sent_inter_node_bytes", sent_inter_node[k]},
        {"step_sent_intra_node_bytes", step_sent_intra_node[k]},
        {"step_sent_inter_node_bytes", step_sent_inter_node[k]}};
  }
  j["traffic"] = traffic;
  return j;
}

const std::vector<dist::GroupKind>& report_group_kinds() {
  using dist::GroupKind;
  static const std::vector<GroupKind> kinds = {GroupKind::kShard, GroupKind::kReplicate, GroupKind::kUlysses,
                                               GroupKind::kRing,  GroupKind::kCfg,       GroupKind::kDp,
                                               GroupKind::kVideo};
  return kinds;
}

nlohmann::json report_header(const dist::DeviceMesh& mesh, const std::string& device, const std::string& layout_choice,
                             const dist::MemoryBudget& budget) {
  const dist::Layout& l = mesh.layout();
  nlohmann::json r;
  r["world_size"] = l.world_size;
  r["device"] = device;
  r["float32_math"] = dist::float32_math();  // CUDA float32 matmuls and convolutions: ieee, or tf32 (--tf32)
  r["cpu_kernels"] = dist::cpu_kernels();    // ATen's vector level (and oneDNN's cap): the last bits follow it
  r["layout"] = {{"dp", l.dp},
                 {"cfg", l.cfg},
                 {"ring", l.ring},
                 {"ulysses", l.ulysses},
                 {"hsdp_shard", l.hsdp_shard},
                 {"hsdp_replicate", l.hsdp_replicate},
                 {"choice", layout_choice}};
  if (budget.bytes > 0) r["memory_budget"] = {{"bytes", budget.bytes}, {"what", budget.what}};
  const dist::Topology& t = mesh.topology();
  nlohmann::json nodes = nlohmann::json::array();
  for (int n = 0; n < t.nodes(); ++n) {
    const std::vector<int> ranks = t.ranks_of(n);
    nodes.push_back({{"host", t.hostnames[static_cast<size_t>(ranks.front())]}, {"ranks", ranks}});
  }
  nlohmann::json groups = nlohmann::json::object();
  for (dist::GroupKind kind : report_group_kinds()) {
    const auto& placed = mesh.placed(kind);
    groups[dist::name_of(kind)] = {{"groups", placed.ranks}, {"max_nodes_spanned", placed.max_nodes()}};
  }
  r["topology"] = {{"nodes", nodes}, {"groups", groups}};
  return r;
}

}  // namespace omni::job

namespace omni::job {
namespace {

// The groups of `kind` in world ranks, then how many nodes they span (several nodes only).
std::string group_listing(const dist::DeviceMesh& mesh, dist::GroupKind kind) {
  const auto& placed = mesh.placed(kind);
  std::ostringstream os;
  std::set<int> spans(placed.nodes.begin(), placed.nodes.end());
  for (size_t g = 0; g < placed.ranks.size(); ++g) {
    os << (g ? " " : "") << "[";
    for (size_t i = 0; i < placed.ranks[g].size(); ++i) os << (i ? "," : "") << placed.ranks[g][i];
    os << "]";
  }
  if (mesh.topology().nodes() > 1) {
    os << "  (each on ";
    for (auto it = spans.begin(); it != spans.end(); ++it) os << (it == spans.begin() ? "" : " or ") << *it;
    os << (*spans.rbegin() == 1 ? " node)" : " nodes)");
  }
  return os.str();
}

const dist::GroupKind kTrafficKinds[] = {dist::GroupKind::kShard, dist::GroupKind::kUlysses, dist::GroupKind::kRing,
                                         dist::GroupKind::kSp, dist::GroupKind::kCfg};

}  // namespace

nlohmann::json float8_record(const config::GenerateOptions& opts, int64_t stored, int64_t quantized,
                             int64_t text_encoder) {
  const bool f8_transformer = opts.weight_format == config::WeightFormat::kFloat8;
  const bool f8_text = opts.text_encoder_weight_format == config::WeightFormat::kFloat8;
  auto warn_none = [&](const char* flag, const char* model) {
    OMNI_WARN(flag, " float8_e4m3fn: no weight of the ", model, " is held in float8; --fp8-layers ",
              config::name_of(opts.fp8_layers), " takes Linear weights of the blocks between the first and the last ",
              "only, and everything else stays in ", dtype_name(opts.dtype));
  };
  const int64_t all = stored + quantized;
  if (f8_transformer && all == text_encoder) warn_none("--weight-dtype", "transformer");
  if (f8_text && text_encoder == 0) warn_none("--text-encoder-weight-dtype", "text encoder");
  if (all == 0) return nlohmann::json::object();
  nlohmann::json r = {
      {"stored", stored}, {"quantized", quantized}, {"text_encoder", text_encoder}, {"matmul", opts.fp8_matmul}};
  if (f8_transformer || f8_text) r["layers"] = config::name_of(opts.fp8_layers);
  OMNI_INFO("float8 weights: ", stored, " as the checkpoints store them, ", quantized, " quantized at load (",
            text_encoder, " of them UMT5's)");
  return r;
}

std::string dry_run_text(const config::GenerateOptions& opts, const dist::DeviceMesh& mesh, const RunIdentity& identity,
                         const pipeline::ModelSpec& model, const std::string& prompts, const MemoryCheck& memory,
                         const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic,
                         const std::string& time_plan) {
  const dist::Layout& layout = mesh.layout();
  std::ostringstream os;
  os << "omni-generate dry run: configuration is valid\n";
  os << "layout: " << layout.summary() << "\n";
  os << "layout choice: " << identity.layout_choice << "\n";
  os << "vae parallel: " << identity.vae_parallel_choice << "\n";
  if (layout.use_hsdp) {
    os << "hsdp: replicate " << layout.hsdp_replicate << " x shard " << layout.hsdp_shard << " (each rank holds 1/"
       << layout.hsdp_shard << " of the sharded weights)\n";
  }
  os << "nodes: " << dist::describe_nodes(mesh.topology()) << "\n";
  os << "groups (world ranks):\n";
  for (dist::GroupKind kind : report_group_kinds())
    os << "  " << dist::name_of(kind) << ": " << group_listing(mesh, kind) << "\n";
  // What --device resolves to on this rank (rank 0), without touching a GPU.
  const int gpus = dist::visible_gpu_count();
  const bool auto_kind = opts.device.kind == dist::DeviceRequest::kAuto;
  os << "device: " << (auto_kind ? (gpus > 0 ? "cuda" : "cpu") : opts.device.str()) << " (--device "
     << opts.device.str() << "; " << gpus << " GPU(s) visible to this LibTorch)\n";
  if (!opts.plan_for.empty()) {
    const dist::PlanTarget target = dist::parse_plan_for(opts.plan_for);
    os << "planned for: " << target.describe() << "; figures: " << target.gpu.source << "\n";
  }
  os << "preset: " << identity.preset << "\n";
  os << "settings:\n" << config::describe(opts, identity.resolved);
  // Where each component comes from (a diffusers folder, Wan2.2's original layout, single files).
  os << "model components:\n";
  for (const auto& kv : model.index().components) os << "  " << kv.first << ": " << model.dir->origin(kv.first) << "\n";
  os << prompts;
  os << memory.describe([&](int r) { return layout.writes_video(mesh.position_of(r)); });
  // What crosses the network: per kind, the largest figure over the ranks.
  os << "traffic per denoising step (estimate; bytes one rank sends, the most of any rank):\n";
  bool any = false;
  for (dist::GroupKind kind : kTrafficKinds) {
    int64_t intra = -1, inter = -1;
    for (const auto& rank : traffic)
      for (const auto& s : rank)
        if (s.kind == kind) intra = std::max(intra, s.intra_node), inter = std::max(inter, s.inter_node);
    if (intra < 0) continue;
    any = true;
    os << "  " << dist::name_of(kind) << ": " << format_bytes(intra) << " within its node, " << format_bytes(inter)
       << " across nodes\n";
  }
  if (!any) os << "  none (one rank computes each video with whole weights)\n";
  if (!time_plan.empty()) os << time_plan << "\n";
  return os.str();
}

nlohmann::json dry_run_report(const dist::DeviceMesh& mesh, const RunIdentity& identity, const MemoryCheck& memory,
                              const std::vector<std::vector<pipeline::StepTrafficSplit>>& traffic,
                              const nlohmann::json& time_plan) {
  nlohmann::json r = report_header(mesh, "cpu", identity.layout_choice, memory.budget());
  if (!time_plan.is_null()) r["time_plan"] = time_plan;
  r["dry_run"] = true;
  r["vae_parallel_choice"] = identity.vae_parallel_choice;
  if (!memory.run().plan_for.empty()) {
    const dist::PlanTarget t = dist::parse_plan_for(memory.run().plan_for);
    r["plan_for"] = {{"name", t.gpu.name},
                     {"product", t.gpu.product},
                     {"memory_bytes", t.gpu.memory_bytes},
                     {"gpus_per_node", t.per_node},
                     {"bf16_tflops", t.gpu.bf16_tflops},
                     {"hbm_gbps", t.gpu.hbm_gbps},
                     {"link_gbps", t.gpu.link_gbps},
                     {"inter_node_gbps", t.gpu.inter_node_gbps},
                     {"source", t.gpu.source}};
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < memory.plans().size(); ++i) {
    nlohmann::json entry = {{"rank", i}};
    entry.update(memory.plans()[i].to_json());
    nlohmann::json est = nlohmann::json::object();
    for (const auto& s : traffic[i])
      est[dist::name_of(s.kind)] = {{"step_sent_intra_node_bytes", s.intra_node},
                                    {"step_sent_inter_node_bytes", s.inter_node}};
    entry["traffic_estimate"] = est;
    ranks.push_back(entry);
  }
  r["ranks"] = ranks;
  return r;
}

void log_run_summary(const config::GenerateOptions& opts, const RunSummary& run, const hsdp::HsdpStats* hsdp,
                     const RankStats& mine) {
  const pipeline::StepCacheCounts* c = run.step_cache_counts;
  if (run.step_cache != pipeline::StepCacheMode::kNone) {
    OMNI_INFO("step cache (", config::name_of(run.step_cache), "): ", c[0].computed + c[1].computed,
              " transformer calls computed, ", c[0].skipped + c[1].skipped, " skipped (transformer ", c[0].skipped,
              ", transformer_2 ", c[1].skipped, ")");
  }
  if (run.time_plan && run.time_plan->contains("measured")) {
    const nlohmann::json& t = *run.time_plan;
    char line[200];
    std::snprintf(line, sizeof(line), "%.3g s per step predicted, %.3g s measured (the slowest rank's median: x%.2f)",
                  t["predicted"]["step_seconds"].get<double>(), t["measured"]["step_seconds"].get<double>(),
                  t["step_ratio"].get<double>());
    OMNI_INFO("time plan: ", line);
  }
  if (hsdp != nullptr) {
    OMNI_INFO("per step this rank gathered ", format_bytes(mine.gathered_bytes_per_step), "; peak gathered ",
              format_bytes(hsdp->gathered_bytes_peak), "; waited ", hsdp->gather_wait_seconds,
              " s on gathers; peak RSS ", format_bytes(mine.peak_rss_bytes));
  }
  // A list says how it went; a single video's failure has already said everything in its own line.
  const bool list = !opts.prompts_file.empty() || run.queue->size() > 1;
  if (!list) return;
  int counts[4] = {0, 0, 0, 0};
  for (VideoStatus s : *run.statuses) ++counts[static_cast<int>(s)];
  const int failed = counts[static_cast<int>(VideoStatus::kFailed)];
  OMNI_INFO("summary: ", counts[static_cast<int>(VideoStatus::kGenerated)], " generated, ",
            counts[static_cast<int>(VideoStatus::kSkipped)], " skipped (already written), ", failed, " failed");
  if (failed == 0) return;
  std::string failed_list;
  for (size_t i = 0; i < run.statuses->size(); ++i)
    if ((*run.statuses)[i] == VideoStatus::kFailed)
      failed_list += (failed_list.empty() ? "" : ", ") + run.queue->videos()[i].output;
  log::write(log::Level::kError, str_cat(failed, " of ", run.queue->size(), " video(s) failed: ", failed_list));
}

nlohmann::json run_report(const dist::DeviceMesh& mesh, const std::string& device, const RunIdentity& identity,
                          const MemoryCheck& memory, const RunSummary& run) {
  const bool cuda = device.rfind("cuda", 0) == 0;
  nlohmann::json r = report_header(mesh, device, identity.layout_choice, memory.budget());
  r["param_bytes_total"] = run.param_bytes_total;
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i < run.ranks->size(); ++i) {
    nlohmann::json entry = (*run.ranks)[i].to_json(cuda);
    entry["rank"] = i;
    if (i < memory.plans().size()) entry.update(memory.plans()[i].to_json());
    ranks.push_back(entry);
  }
  r["ranks"] = ranks;
  nlohmann::json timings;
  for (const char* k : {"load", "text_encode", "image_encode", "denoise", "decode", "write"})
    timings[k] = run.times->get(k);
  timings["total"] = run.total_seconds;
  r["timings"] = timings;
  nlohmann::json outputs = nlohmann::json::array(), videos = nlohmann::json::array();
  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < run.statuses->size(); ++i) {
    const VideoStatus status = (*run.statuses)[i];
    ++counts[static_cast<int>(status)];
    const VideoSpec& v = run.queue->videos()[i];
    outputs.push_back(v.output);
    nlohmann::json entry = {{"output", v.output}, {"status", status_name(status)}};
    if (v.line > 0) entry["line"] = v.line;
    videos.push_back(entry);
  }
  r["outputs"] = outputs;
  r["videos"] = videos;
  r["summary"] = {{"generated", counts[static_cast<int>(VideoStatus::kGenerated)]},
                  {"skipped", counts[static_cast<int>(VideoStatus::kSkipped)]},
                  {"failed", counts[static_cast<int>(VideoStatus::kFailed)]}};
  if (const nlohmann::json lora = run.lora->to_json(); !lora.empty()) r["lora"] = lora;
  if (!identity.float8_weights.empty()) r["float8_weights"] = identity.float8_weights;
  if (run.time_plan && !run.time_plan->empty()) r["time_plan"] = *run.time_plan;
  if (run.step_cache != pipeline::StepCacheMode::kNone) {
    // Rank 0's transformer calls over its videos (every rank of its group took the same decisions).
    const pipeline::StepCacheCounts* c = run.step_cache_counts;
    r["step_cache"] = {{"mode", config::name_of(run.step_cache)},
                       {"threshold", run.step_cache_threshold},
                       {"computed", c[0].computed + c[1].computed},
                       {"skipped", c[0].skipped + c[1].skipped},
                       {"transformer", {{"computed", c[0].computed}, {"skipped", c[0].skipped}}},
                       {"transformer_2", {{"computed", c[1].computed}, {"skipped", c[1].skipped}}}};
  }
  return r;
}

}  // namespace omni::job
