#include "job/generation_job.h"

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include "core/dtype.h"
#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/tensor_dump.h"
#include "dist/agreement.h"
#include "dist/device.h"
#include "dist/process_group.h"
#include "dist/watchdog.h"
#include "io/image_reader.h"
#include "io/image_resize.h"
#include "io/model_dir.h"
#include "io/video_writer.h"
#include "job/check_inputs.h"
#include "job/memory_check.h"
#include "job/prompt_summary.h"
#include "models/lora.h"

namespace omni::job {
namespace {

using config::set_by_user;

// Test hook for the abort path: OMNI_FAULT_INJECT="RANK:STEP" makes that rank fail after that denoising step,
// while the others are inside collectives, as a real failure (out of memory, a bad device) would.
// "RANK:STEP:VIDEO:kill" kills that rank outright (SIGKILL, as a preempted node) after STEP of the VIDEO-th
// video it generates (0-based), to test resuming.
void maybe_inject_fault(int rank, int step, int video) {
  static const char* spec = std::getenv("OMNI_FAULT_INJECT");
  if (spec == nullptr) return;
  int fault_rank = -1, fault_step = -1, fault_video = -1;
  char mode[8] = "";
  const int n = std::sscanf(spec, "%d:%d:%d:%7s", &fault_rank, &fault_step, &fault_video, mode);
  if (n < 2 || rank != fault_rank || step != fault_step) return;
  if (n == 4 && std::string(mode) == "kill") {
    if (video == fault_video) std::raise(SIGKILL);
    return;
  }
  OMNI_FAIL("injected fault (OMNI_FAULT_INJECT=", spec, ") after step ", step);
}

}  // namespace

GenerationJob::GenerationJob(config::GenerateOptions options, ResolvedRun run, std::string preset,
                             const dist::DeviceMesh& mesh, std::string layout_line)
    : opts_(std::move(options)),
      mesh_(mesh),
      model_(std::move(run.model)),
      settings_(std::move(run.settings)),
      identity_{model_->root(),
                model_->index().class_name,
                std::move(preset),
                "",  // the device, once load() selected it
                mesh.layout().summary(),
                std::move(layout_line),
                std::move(run.checkpoint),
                nlohmann::json::object()},
      queue_(std::make_unique<VideoQueue>(std::move(run.videos), run.written)),
      writer_(opts_) {
  // Before any kernel, and before a dry run's report says what ran.
  dist::set_float32_math(opts_.tf32);
}

GenerationJob::~GenerationJob() = default;

void GenerationJob::resolve() {
  dist::run_agreed(mesh_.world(), [&] {
    std::vector<std::pair<int, int>> image_hw;  // per video: the conditioning image's size, or 0x0
    for (const auto& v : queue_->videos()) {
      int h = 0, w = 0;
      with_origin(v.origin, [&] {
        tasks_.push_back(choose_task(model_->index(), v.opts.task, !v.opts.image.empty()));
        if (!v.opts.image.empty()) {
          at::Tensor raw = io::read_image(v.opts.image);  // [H, W, 3] uint8; input error naming the file
          h = static_cast<int>(raw.size(0));
          w = static_cast<int>(raw.size(1));
        }
      });
      image_hw.emplace_back(h, w);
    }
    for (int e = 0; e < 2; ++e)
      for (const auto& l : settings_.lora[e]) lora_.expert[e].push_back({l.path, l.scale, ""});
    // The model's shapes for the memory plan: its spec (configs and safetensors headers, no weight).
    memory_ = std::make_unique<MemoryCheck>(*model_, settings_, opts_, mesh_.layout());

    // Without explicit sizes, an image decides them: its aspect ratio within the preset's area, snapped to
    // what the model needs (Wan2.2's rule).
    for (int i = 0; i < static_cast<int>(queue_->size()); ++i) {
      auto& o = queue_->video(i).opts;
      if (o.image.empty() || set_by_user(o, "height") || set_by_user(o, "width")) continue;
      const auto [ih, iw] = image_hw[static_cast<size_t>(i)];
      auto hw = io::derive_size(ih, iw, static_cast<int64_t>(o.height) * o.width, model_->spatial_multiple());
      o.height = static_cast<int>(hw.first);
      o.width = static_cast<int>(hw.second);
      if (mesh_.rank() == 0)
        OMNI_INFO("size ", o.height, "x", o.width, " from the image (", ih, "x", iw, ")",
                  queue_->size() > 1 ? " for " + queue_->video(i).output : "");
    }
    // Each video's sizes against the model before anything is read, so that a bad size is one agreed error
    // naming the line, not an abort mid-run.
    const int decode_ranks = opts_.vae_parallel ? mesh_.layout().video_size() : 1;
    for (int i = 0; i < static_cast<int>(queue_->size()); ++i) {
      if (queue_->status(i) != VideoStatus::kPending) continue;
      with_origin(queue_->video(i).origin, [&] { check_video(*model_, queue_->video(i).params(), decode_ranks); });
    }
  });
}

pipeline::RankWork GenerationJob::work_of(int rank) const {
  const auto& l = mesh_.layout();
  pipeline::RankWork w;
  const int position = mesh_.position_of(rank);  // the layout's coordinates are the rank's position
  w.gathers_video = l.writes_video(position);
  w.decode_group = opts_.vae_parallel ? l.video_size() : 1;
  for (const auto& a : queue_->assignments_of(l.dp_index(position), l.dp)) {
    pipeline::PlannedVideo v;
    v.video = queue_->video(a.video).params();
    v.decoded = a.real && (w.gathers_video || w.decode_group > 1);
    w.videos.push_back(v);
  }
  return w;
}

std::vector<std::vector<GenerationJob::StepTrafficSplit>> GenerationJob::step_traffic_estimate() const {
  std::vector<std::vector<StepTrafficSplit>> out(static_cast<size_t>(mesh_.world_size()));
  if (queue_->size() == 0) return out;
  // The largest video: its step sends the most.
  size_t largest = 0;
  int64_t most = -1;
  for (size_t i = 0; i < queue_->size(); ++i) {
    const auto& o = queue_->video(static_cast<int>(i)).opts;
    const int64_t area = static_cast<int64_t>(o.height) * o.width * o.num_frames;
    if (area > most) most = area, largest = i;
  }
  const pipeline::StepTraffic t = memory_->step_traffic(queue_->video(static_cast<int>(largest)).params());
  const auto& l = mesh_.layout();
  const auto& topo = mesh_.topology();
  for (int r = 0; r < mesh_.world_size(); ++r) {
    const int node = topo.node_of[static_cast<size_t>(r)];
    for (const auto& [kind, bytes] : std::vector<std::pair<const char*, int64_t>>{
             {"shard", t.shard}, {"ulysses", t.ulysses}, {"ring", t.ring}, {"sp", t.sp}, {"cfg", t.cfg}}) {
      if (bytes == 0) continue;
      // This rank's group of `kind`, in world ranks (layout order).
      std::vector<int> group;
      for (int pos : l.group_of(kind, mesh_.position_of(r)))
        group.push_back(mesh_.placement().rank_at[static_cast<size_t>(pos)]);
      const int n = static_cast<int>(group.size());
      if (n < 2) continue;
      const int me = static_cast<int>(std::find(group.begin(), group.end(), r) - group.begin());
      StepTrafficSplit split{kind, 0, 0};
      if (std::string(kind) == "ring") {  // every hop goes to the next ring rank
        const int next = group[static_cast<size_t>((me + 1) % n)];
        (topo.node_of[static_cast<size_t>(next)] == node ? split.intra_node : split.inter_node) = bytes;
      } else {  // spread evenly over the other ranks of the group
        int across = 0;
        for (int peer : group) across += peer != r && topo.node_of[static_cast<size_t>(peer)] != node ? 1 : 0;
        split.inter_node = bytes * across / (n - 1);
        split.intra_node = bytes - split.inter_node;
      }
      out[static_cast<size_t>(r)].push_back(split);
    }
  }
  return out;
}

void GenerationJob::plan_memory() {
  std::vector<pipeline::RankWork> work;
  for (int r = 0; r < mesh_.world_size(); ++r) work.push_back(work_of(r));
  memory_->plan(work);
  memory_->check(mesh_);
}

void GenerationJob::prepare() {
  resolve();
  for (int i = 0; i < static_cast<int>(queue_->size()); ++i)
    if (queue_->status(i) == VideoStatus::kSkipped && mesh_.rank() == 0)
      OMNI_INFO("skipping ", queue_->video(i).output, ": already written (--overwrite regenerates it)");
  dist::run_agreed(mesh_.world(), [&] {
    // Every path this run will write, checked on every rank before any weight is read.
    writer_.check_paths(*queue_);
    // The LoRA files' digests, for the sidecars and the MP4 metadata: rank 0 reads them, all get them.
    if (mesh_.rank() == 0 && has_work())
      for (auto& records : lora_.expert)
        for (auto& r : records) r.sha256 = sha256_file(r.path);
  });
  if (has_work()) {
    std::string digests;
    for (const auto& records : lora_.expert)
      for (const auto& r : records) digests += r.sha256 + "\n";
    std::istringstream lines(mesh_.world().broadcast(digests));
    for (auto& records : lora_.expert)
      for (auto& r : records) std::getline(lines, r.sha256);
  }
  const int skipped = queue_->count(VideoStatus::kSkipped);
  update_interrupt_message();
  OMNI_INFO("model ", model_->root(), " (", model_->index().class_name, ", task ", pipeline::task_name(tasks_[0]),
            "); ", queue_->size(), " video(s) over ", mesh_.layout().dp, " data-parallel group(s)",
            skipped ? str_cat(", ", skipped, " already written") : "");
  plan_memory();
}

int GenerationJob::dry_run(const std::function<void()>& print_header) {
  resolve();
  // The plan's report, checked on every rank before rank 0 writes it alone: an existing file is one agreed
  // error, not a failure of rank 0 after the others exited 0.
  if (!opts_.report.empty())
    dist::run_agreed(mesh_.world(), [&] { io::check_output_writable(opts_.report, opts_.overwrite); });
  plan_memory();
  // The prompts as the encoder would get them: the tokenizer is read on every rank, so that a bad tokenizer
  // folder is one agreed error.
  std::string prompts;
  dist::run_agreed(mesh_.world(), [&] {
    const auto tokenizer = models::Umt5Tokenizer::of_model(*model_->dir);
    if (mesh_.rank() == 0) prompts = describe_prompts(tokenizer, *queue_, /*max_videos=*/20);
  });
  if (mesh_.rank() != 0) return 0;
  print_header();
  // Where each component comes from (a diffusers folder, Wan2.2's original layout, single files).
  std::string sources = "model components:\n";
  for (const auto& kv : model_->index().components)
    sources += "  " + kv.first + ": " + model_->dir->origin(kv.first) + "\n";
  std::string text =
      sources + prompts + memory_->describe([&](int r) { return mesh_.layout().writes_video(mesh_.position_of(r)); });
  // What crosses the network: per kind, the largest figure over the ranks.
  const auto traffic = step_traffic_estimate();
  std::ostringstream tl;
  tl << "traffic per denoising step (estimate; bytes one rank sends, the most of any rank):\n";
  bool any = false;
  for (const char* kind : {"shard", "ulysses", "ring", "sp", "cfg"}) {
    int64_t intra = -1, inter = -1;
    for (const auto& rank : traffic)
      for (const auto& s : rank)
        if (s.kind == kind) intra = std::max(intra, s.intra_node), inter = std::max(inter, s.inter_node);
    if (intra < 0) continue;
    any = true;
    tl << "  " << kind << ": " << format_bytes(intra) << " within its node, " << format_bytes(inter)
       << " across nodes\n";
  }
  if (!any) tl << "  none (one rank computes each video with whole weights)\n";
  text += tl.str();
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (!opts_.report.empty()) {
    nlohmann::json r = report_header(mesh_, device_.str(), identity_.layout_choice, memory_->budget());
    r["dry_run"] = true;
    nlohmann::json ranks = nlohmann::json::array();
    for (size_t i = 0; i < memory_->plans().size(); ++i) {
      nlohmann::json entry = {{"rank", i}};
      entry.update(memory_->plans()[i].to_json());
      nlohmann::json est = nlohmann::json::object();
      for (const auto& s : traffic[i])
        est[s.kind] = {{"step_sent_intra_node_bytes", s.intra_node}, {"step_sent_inter_node_bytes", s.inter_node}};
      entry["traffic_estimate"] = est;
      ranks.push_back(entry);
    }
    r["ranks"] = ranks;
    write_file_atomically(opts_.report, r.dump(2) + "\n", opts_.overwrite);
    OMNI_INFO("wrote memory plan ", opts_.report);
  }
  return 0;
}

void GenerationJob::load() {
  ScopedPhase phase(times_, "load");
  // The device first, agreed on its own: every rank's GPU is current and every rank knows that all the
  // others got theirs before any communicator is created (the pipeline's NCCL groups), so a rank that fails
  // here cannot leave the others waiting inside a communicator's set-up.
  dist::run_agreed(mesh_.world(), [&] {
    device_ = dist::select_device(opts_.device, mesh_.world(), opts_.allow_shared_gpu);
    identity_.device = device_.str();
    dist::set_collective_timeout(opts_.collective_timeout);
  });
  stats_.baseline_rss_bytes = current_rss_bytes();  // before any weight is read (a GPU's context included)
  dist::run_agreed(mesh_.world(), [&] {
    // The settings resolved once (ResolvedRun::settings), on the device just selected.
    pipeline::PipelineSettings s = settings_;
    s.device = device_;
    pipeline_ = std::make_unique<pipeline::WanPipeline>(*model_, s, &mesh_);
    if (mesh_.layout().cfg == 2 && !video_params(opts_).guidance_on()) {
      OMNI_WARN("--cfg-parallel-size 2 with guidance off (scale <= 1): both cfg ranks compute the same branch");
    }
  });
  // The load's own peaks (what LoRA merging, say, adds), before any generation raises them.
  stats_.load_peak_rss_bytes = peak_rss_bytes();
  stats_.load_peak_device_bytes = dist::peak_device_bytes(device_);
  const auto& st = pipeline_->hsdp_stats();
  OMNI_INFO("loaded in ", std::round(phase.seconds() * 10) / 10, " s: weights ",
            format_bytes(pipeline_->param_bytes_total()), " in all, this rank holds ",
            format_bytes(st.param_bytes_resident), " of the sharded models");
  const int64_t float8_all = st.float8_weights_stored + st.float8_weights_quantized;
  const int64_t float8_text = pipeline_->text_encoder_float8_weights();
  // A model of two blocks has none in the middle: its run is the --dtype run, which the user should hear
  // rather than read float8 in the settings and trust it.
  auto warn_none = [&](const char* flag, const char* model) {
    OMNI_WARN(flag, " float8_e4m3fn: no weight of the ", model, " is held in float8; --fp8-layers ",
              config::name_of(opts_.fp8_layers), " takes Linear weights of the blocks between the first and the last ",
              "only, and everything else stays in ", dtype_name(opts_.dtype));
  };
  if (opts_.weight_format == config::WeightFormat::kFloat8 && float8_all == float8_text)
    warn_none("--weight-dtype", "transformer");
  if (opts_.text_encoder_weight_format == config::WeightFormat::kFloat8 && float8_text == 0)
    warn_none("--text-encoder-weight-dtype", "text encoder");
  if (float8_all > 0) {
    identity_.float8_weights = {{"stored", st.float8_weights_stored},
                                {"quantized", st.float8_weights_quantized},
                                {"text_encoder", float8_text},
                                {"matmul", opts_.fp8_matmul}};
    if (opts_.weight_format == config::WeightFormat::kFloat8 ||
        opts_.text_encoder_weight_format == config::WeightFormat::kFloat8)
      identity_.float8_weights["layers"] = config::name_of(opts_.fp8_layers);
    OMNI_INFO("float8 weights: ", st.float8_weights_stored, " as the checkpoints store them, ",
              st.float8_weights_quantized, " quantized at load (", float8_text, " of them UMT5's)");
  }
}

int GenerationJob::run() {
  const bool writer = mesh_.layout().writes_video(mesh_.position());
  const auto& l = mesh_.layout();
  int generated_here = 0;  // videos this rank generated, for the kill hook
  for (const auto& a : queue_->assignments_of(l.dp_index(mesh_.position()), l.dp)) {
    const VideoSpec& v = queue_->video(a.video);
    const auto& o = v.opts;
    pipeline::GenerationRequest req;
    req.prompt = o.prompt;
    req.negative_prompt = o.negative_prompt;
    if (!o.image.empty()) {
      // One --image over a whole list is read and resized once.
      const std::string key = str_cat(o.image, "@", o.height, "x", o.width);
      if (key != image_key_) image_ = io::load_conditioning_image(o.image, o.height, o.width);  // [1, 3, H, W]
      image_key_ = key;
      req.image = image_;
    }
    req.video = v.params();
    req.decode = writer && a.real;
    req.decode_band = opts_.vae_parallel && a.real;  // a repeat run's whole group skips the decode together
    req.keep_tensors = writer && a.real && !v.tensors_path.empty();

    // Dumps are written by the rank that writes this video (with cfg parallelism it sees the cond calls only).
    // Every rank of its group collects them: a split forward gathers the blocks' tokens for its dumps, a
    // collective of the sequence-parallel group. The others drop theirs after the video.
    const bool dumps = a.real && !v.dump_path.empty();
    debug::enable_dumps(dumps);
    Progress progress("generate", req.video.num_inference_steps, mesh_.rank() == 0 && a.real);
    Timer t;
    std::map<std::string, dist::TrafficCounts> traffic_before = dist::traffic_totals();
    pipeline::GenerationResult result = pipeline_->generate(req, [&](const pipeline::StepInfo& s) {
      // What this step sent: the totals' change since the step before (the first step: since the video began,
      // its text encoding included).
      const std::map<std::string, dist::TrafficCounts> now = dist::traffic_totals();
      for (size_t k = 0; k < dist::DeviceMesh::kinds().size(); ++k) {
        const char* kind = dist::DeviceMesh::kinds()[k];
        const auto it = now.find(kind);
        const auto was = traffic_before.find(kind);
        const dist::TrafficCounts a = it == now.end() ? dist::TrafficCounts{} : it->second;
        const dist::TrafficCounts b = was == traffic_before.end() ? dist::TrafficCounts{} : was->second;
        stats_.step_sent_intra_node[k] = a.intra_node_bytes - b.intra_node_bytes;
        stats_.step_sent_inter_node[k] = a.inter_node_bytes - b.inter_node_bytes;
      }
      traffic_before = now;
      progress.update(s.step + 1, s.seconds, s.cached ? std::string(s.expert) + ", cached" : s.expert);
      maybe_inject_fault(mesh_.rank(), s.step, generated_here);
    });
    progress.finish();
    if (dumps && !req.decode) debug::take_dumps();
    ++generated_here;
    stats_.gathered_bytes_per_step = pipeline_->gathered_bytes_last_step();
    for (const auto& [phase, sec] : result.times.all()) times_.add(phase, sec);
    stats_.vae_peak_bytes = std::max(stats_.vae_peak_bytes, result.vae_peak_bytes);
    // Work that makes a video (a repeat run that only keeps the gathers in step is not).
    if (a.real) {
      stats_.compute_seconds += result.times.get("text_encode") + result.times.get("image_encode") +
                                result.times.get("denoise") + result.times.get("decode");
      for (int e = 0; e < 2; ++e) {
        step_cache_counts_[e].computed += result.step_cache[e].computed;
        step_cache_counts_[e].skipped += result.step_cache[e].skipped;
      }
    }
    if (!req.decode) continue;
    const int max_len = req.video.max_sequence_length;
    for (const auto& line :
         {truncation_warning(result.prompt, "prompt", v.origin, max_len),
          req.video.guidance_on() ? truncation_warning(result.negative_prompt, "negative prompt", v.origin, max_len)
                                  : std::string()})
      if (!line.empty()) OMNI_WARN(line);
    // A video that cannot be written fails alone: the others of this group are not in a collective with
    // this write, and the next video keeps them in step.
    try {
      ScopedPhase write_phase(times_, "write");
      writer_.write(a.video, v, pipeline::task_name(tasks_[static_cast<size_t>(a.video)]), result, t.seconds(),
                    identity_, lora_);
      queue_->set_status(a.video, VideoStatus::kGenerated);
      update_interrupt_message();
    } catch (const std::exception& e) {
      queue_->set_status(a.video, VideoStatus::kFailed);
      log::write_all_ranks(log::Level::kError, str_cat("failed to write ", v.output, ": ", e.what()));
    }
  }
  return finish();
}

void GenerationJob::update_interrupt_message() const {
  // Rank 0 says it once for the job (every rank removes its own temporary files).
  if (mesh_.rank() != 0) return;
  std::string line = str_cat("the video in progress is abandoned (no partial file is left); ",
                             queue_->count(VideoStatus::kSkipped), " video(s) written by earlier runs and ",
                             queue_->count(VideoStatus::kGenerated), " by this rank are kept");
  if (!opts_.prompts_file.empty()) line += "; run the same command again to make the rest (written videos are skipped)";
  set_interrupt_message(line);
}

int GenerationJob::finish() {
  const std::vector<VideoStatus> status = queue_->agreed_statuses(mesh_.world());
  int counts[4] = {0, 0, 0, 0};
  for (VideoStatus s : status) ++counts[static_cast<int>(s)];
  const int generated = counts[static_cast<int>(VideoStatus::kGenerated)];
  const int skipped = counts[static_cast<int>(VideoStatus::kSkipped)];
  const int failed = counts[static_cast<int>(VideoStatus::kFailed)];

  hsdp::HsdpStats none;
  const auto& st = pipeline_ ? pipeline_->hsdp_stats() : none;
  stats_.param_bytes_resident = st.param_bytes_resident;
  stats_.gathered_bytes_peak = st.gathered_bytes_peak;
  stats_.disk_bytes_read = pipeline_ ? pipeline_->disk_bytes_read() : 0;
  stats_.gather_wait_seconds = st.gather_wait_seconds;
  stats_.peak_rss_bytes = peak_rss_bytes();
  stats_.peak_device_bytes = dist::peak_device_bytes(device_);
  stats_.decode_seconds = times_.get("decode");
  const std::map<std::string, dist::TrafficCounts> traffic = dist::traffic_totals();
  for (size_t k = 0; k < dist::DeviceMesh::kinds().size(); ++k) {
    const auto it = traffic.find(dist::DeviceMesh::kinds()[k]);
    if (it == traffic.end()) continue;
    stats_.sent_intra_node[k] = it->second.intra_node_bytes;
    stats_.sent_inter_node[k] = it->second.inter_node_bytes;
    stats_.collectives[k] = it->second.collectives;
  }
  const std::vector<RankStats> all = mesh_.world().gather(stats_);
  const int code = failed > 0 ? 1 : 0;
  if (mesh_.rank() != 0) return code;

  const char* cache_mode = config::name_of(opts_.step_cache);
  const auto& c = step_cache_counts_;
  const bool caching = opts_.step_cache != pipeline::StepCacheMode::kNone;
  if (caching) {
    OMNI_INFO("step cache (", cache_mode, "): ", c[0].computed + c[1].computed, " transformer calls computed, ",
              c[0].skipped + c[1].skipped, " skipped (transformer ", c[0].skipped, ", transformer_2 ", c[1].skipped,
              ")");
  }
  if (pipeline_) {
    OMNI_INFO("per step this rank gathered ", format_bytes(stats_.gathered_bytes_per_step), "; peak gathered ",
              format_bytes(st.gathered_bytes_peak), "; waited ", st.gather_wait_seconds, " s on gathers; peak RSS ",
              format_bytes(stats_.peak_rss_bytes));
  }
  // A list says how it went; a single video's failure has already said everything in its own line.
  const bool list = !opts_.prompts_file.empty() || queue_->size() > 1;
  if (list)
    OMNI_INFO("summary: ", generated, " generated, ", skipped, " skipped (already written), ", failed, " failed");
  if (list && failed > 0) {
    std::string failed_list;
    for (size_t i = 0; i < status.size(); ++i)
      if (status[i] == VideoStatus::kFailed)
        failed_list += (failed_list.empty() ? "" : ", ") + queue_->videos()[i].output;
    log::write(log::Level::kError, str_cat(failed, " of ", queue_->size(), " video(s) failed: ", failed_list));
  }

  if (!opts_.report.empty()) {
    const bool cuda = device_.is_cuda();
    nlohmann::json r = report_header(mesh_, device_.str(), identity_.layout_choice, memory_->budget());
    r["param_bytes_total"] = pipeline_ ? pipeline_->param_bytes_total() : 0;
    nlohmann::json ranks = nlohmann::json::array();
    for (size_t i = 0; i < all.size(); ++i) {
      nlohmann::json entry = all[i].to_json(cuda);
      entry["rank"] = i;
      if (i < memory_->plans().size()) entry.update(memory_->plans()[i].to_json());
      ranks.push_back(entry);
    }
    r["ranks"] = ranks;
    nlohmann::json timings;
    for (const char* k : {"load", "text_encode", "image_encode", "denoise", "decode", "write"})
      timings[k] = times_.get(k);
    timings["total"] = total_.seconds();
    r["timings"] = timings;
    nlohmann::json outputs = nlohmann::json::array(), videos = nlohmann::json::array();
    for (size_t i = 0; i < status.size(); ++i) {
      const VideoSpec& v = queue_->videos()[i];
      outputs.push_back(v.output);
      nlohmann::json entry = {{"output", v.output}, {"status", status_name(status[i])}};
      if (v.line > 0) entry["line"] = v.line;
      videos.push_back(entry);
    }
    r["outputs"] = outputs;
    r["videos"] = videos;
    r["summary"] = {{"generated", generated}, {"skipped", skipped}, {"failed", failed}};
    if (const nlohmann::json lora = lora_.to_json(); !lora.empty()) r["lora"] = lora;
    if (!identity_.float8_weights.empty()) r["float8_weights"] = identity_.float8_weights;
    if (caching) {
      // Rank 0's transformer calls over its videos (every rank of its group took the same decisions).
      r["step_cache"] = {
          {"mode", cache_mode},
          {"threshold", opts_.step_cache_threshold.value_or(pipeline::default_step_cache_threshold(opts_.step_cache))},
          {"computed", c[0].computed + c[1].computed},
          {"skipped", c[0].skipped + c[1].skipped},
          {"transformer", {{"computed", c[0].computed}, {"skipped", c[0].skipped}}},
          {"transformer_2", {{"computed", c[1].computed}, {"skipped", c[1].skipped}}}};
    }
    write_file_atomically(opts_.report, r.dump(2) + "\n", writer_.may_replace_report());
    OMNI_INFO("wrote report ", opts_.report);
  }
  return code;
}

}  // namespace omni::job
