#include "job/generation_job.h"

#include <algorithm>
#include <cstdio>

#include "core/device_clock.h"
#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "core/memory.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/tensor_dump.h"
#include "dist/agreement.h"
#include "dist/device.h"
#include "dist/gpu_table.h"
#include "dist/process_group.h"
#include "dist/watchdog.h"
#include "io/model_dir.h"
#include "io/video_writer.h"
#include "job/animate_resume.h"
#include "job/check_inputs.h"
#include "job/fault_injection.h"
#include "job/memory_check.h"
#include "job/model_files.h"
#include "job/prompt_summary.h"
#include "pipeline/time_plan.h"

namespace omni::job {
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
                nlohmann::json::object(),
                model_files_record(*model_->dir)},
      queue_(std::make_unique<VideoQueue>(std::move(run.videos), run.written)),
      writer_(opts_),
      inputs_(model_->temporal_factor(), static_cast<int>(model_->vae.scale_factor_spatial),
              model_->experts.front().motion_encoder_size),
      rates_(std::move(run.rates)) {
  // Before any kernel, and before a dry run's report says what ran.
  dist::set_float32_math(opts_.tf32            ? dist::Float32Math::kTf32
                         : opts_.exact_float32 ? dist::Float32Math::kIeee
                                               : dist::Float32Math::kTorchDefault);
}

GenerationJob::~GenerationJob() = default;

void GenerationJob::prepare_inputs() {
  dist::run_agreed(mesh_.world(), [&] {
    const dist::Layout& l = mesh_.layout();
    tasks_ = check_inputs(*queue_, *model_, opts_.vae_parallel ? l.video_size() : 1, mesh_.world(),
                          l.groups_share_shards() ? l.hsdp_shard : 0);
    for (int e = 0; e < 2; ++e)
      for (const auto& l : settings_.lora[e]) lora_.expert[e].push_back({l.path, l.scale, ""});
    // The model's shapes for the memory plan: its spec (configs and safetensors headers, no weight).
    memory_ = std::make_unique<MemoryCheck>(*model_, settings_, opts_, mesh_.layout());
  });
  choose_vae_parallel();
  if (mesh_.rank() == 0 && mesh_.layout().video_size() > 1) OMNI_INFO("vae parallel: ", identity_.vae_parallel_choice);
  memory_->check(mesh_);
  // The time plan's rates for a dry run's plan and a report's predicted beside measured (a CPU measures them
  // now, every rank at once), where the layout choice did not find them.
  if (!rates_ && (opts_.dry_run || !opts_.report.empty()))
    dist::run_agreed(mesh_.world(), [&] {
      rates_ = run_rates(opts_, *model_, queue_->largest_video(), memory_->budget(), mesh_.world());
    });
}

int64_t GenerationJob::plan_memory(bool vae_parallel) {
  std::vector<pipeline::RankWork> work;
  for (int r = 0; r < mesh_.world_size(); ++r) work.push_back(rank_work(*queue_, mesh_, r, vae_parallel));
  memory_->plan(work);
  int64_t peak = 0;
  for (const auto& p : memory_->plans()) peak = std::max(peak, p.peak_bytes());
  return peak;
}

void GenerationJob::choose_vae_parallel() {
  std::string& why = identity_.vae_parallel_choice;
  const int group = mesh_.layout().video_size();
  int height = 0;
  const int64_t rows = fewest_latent_rows(*queue_, *model_, &height);
  // The peak's rank and phase, for the line.
  auto peak_line = [&](int64_t peak) {
    for (size_t r = 0; r < memory_->plans().size(); ++r)
      if (memory_->plans()[r].peak_bytes() == peak)
        return str_cat(format_bytes(peak), " (rank ", r, " at ", memory_->plans()[r].peak_phase().name, ")");
    return format_bytes(peak);
  };
  if (opts_.vae_parallel) {
    why = "on (--vae-parallel)";
  } else if (opts_.no_vae_parallel) {
    why = "off (--no-vae-parallel)";
  } else if (group == 1) {
    why = "off (one rank per video)";
  } else if (rows < group) {
    why = str_cat("off (a ", height, "-pixel height has ", rows, " latent rows, fewer than the ", group,
                  " ranks of a video's group)");
  } else {
    const int64_t one = plan_memory(false);
    const std::string one_line = peak_line(one);
    const int64_t banded = plan_memory(true);
    if (banded < one) {
      why = str_cat("on (chosen: it lowers the planned peak from ", one_line, " to ", peak_line(banded),
                    "; --no-vae-parallel decodes on one rank)");
      opts_.vae_parallel = settings_.vae_parallel = true;
      opts_.sources["vae-parallel"] = {config::Source::kMemoryPlan, ""};
      for (int i = 0; i < static_cast<int>(queue_->size()); ++i) {  // what each video's sidecar records
        queue_->video(i).opts.vae_parallel = true;
        queue_->video(i).opts.sources["vae-parallel"] = opts_.sources["vae-parallel"];
      }
      return;  // planned with it
    }
    why = str_cat("off (not chosen: it would not lower the planned peak, ", one_line, ")");
  }
  plan_memory(opts_.vae_parallel);
}

void GenerationJob::prepare() {
  prepare_inputs();
  for (int i = 0; i < static_cast<int>(queue_->size()); ++i)
    if (queue_->status(i) == VideoStatus::kSkipped && mesh_.rank() == 0)
      OMNI_INFO("skipping ", queue_->video(i).output, ": already written (--overwrite regenerates it)");
  std::vector<std::string> digests;
  dist::run_agreed(mesh_.world(), [&] {
    // Every path this run will write, checked on every rank before any weight is read.
    writer_.check_paths(*queue_);
    // The LoRA files' digests, for the sidecars and the MP4 metadata: rank 0 reads them, all get them.
    if (mesh_.rank() == 0 && has_work())
      for (const auto& records : lora_.expert)
        for (const auto& r : records) digests.push_back(sha256_file(r.path));
  });
  if (has_work()) {
    digests = mesh_.world().broadcast(digests);
    size_t i = 0;
    for (auto& records : lora_.expert)
      for (auto& r : records) r.sha256 = digests.at(i++);
  }
  const int skipped = queue_->count(VideoStatus::kSkipped);
  update_interrupt_message();
  OMNI_INFO("model ", model_->root(), " (", model_->index().class_name, ", task ", pipeline::task_name(tasks_[0]),
            "); ", queue_->size(), " video(s) over ", mesh_.layout().dp, " data-parallel group(s)",
            skipped ? str_cat(", ", skipped, " already written") : "");
}

int GenerationJob::dry_run() {
  // The plan's report, checked on every rank before rank 0 writes it alone: an existing file is one agreed
  // error, not a failure of rank 0 after the others exited 0.
  if (!opts_.report.empty())
    dist::run_agreed(mesh_.world(), [&] { io::check_output_writable(opts_.report, opts_.overwrite); });
  prepare_inputs();
  // The prompts as the encoder would get them.
  const std::string prompts = agreed_prompt_listing(*model_->dir, *queue_, mesh_.world());
  if (mesh_.rank() != 0) return 0;
  const auto traffic = pipeline::split_step_traffic(memory_->step_traffic(queue_->largest_video()), mesh_);
  // The time plan of the largest video on the slowest rank, and every other layout's (where the rates are known).
  std::string time_line;
  nlohmann::json time_json;
  if (rates_) {
    const TimeReport t =
        time_report(*memory_, *queue_, traffic, opts_.vae_parallel ? mesh_.layout().video_size() : 1, *rates_,
                    layout_options(*model_, settings_, opts_, mesh_.world_size(), *queue_, *rates_,
                                   mesh_.topology().node_of, memory_->budget().bytes),
                    mesh_.layout());
    time_line = t.text;
    time_json = t.json;
  }
  const std::string text = dry_run_text(opts_, mesh_, identity_, *model_, prompts, *memory_, traffic, time_line);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (!opts_.report.empty()) {
    write_file_atomically(opts_.report, dry_run_report(mesh_, identity_, *memory_, traffic, time_json).dump(2) + "\n",
                          opts_.overwrite);
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
  // The weights' uploads are asynchronous (pinned staging): the load has ended when the device has them, as the
  // report's load phase counts it.
  device_synchronize(device_);
  OMNI_INFO("loaded in ", format_duration(phase.seconds()), ": weights ", format_bytes(pipeline_->param_bytes_total()),
            " in all, this rank holds ", format_bytes(st.param_bytes_resident), " of the sharded models");
  identity_.float8_weights = float8_record(opts_, st.float8_weights_stored, st.float8_weights_quantized,
                                           pipeline_->text_encoder_float8_weights());
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
    req.video = v.params();
    inputs_.fill(o, req);
    req.decode = writer && a.real;
    req.group_decodes = a.real;
    req.decode_band = opts_.vae_parallel && a.real;  // a repeat run's whole group skips the decode together
    req.keep_tensors = writer && a.real && !v.tensors_path.empty();
    // Animate: what a stopped run of this video finished, and where each finished segment is kept.
    const int tf = model_->temporal_factor(), segments = static_cast<int>(req.video.segments(tf));
    std::string resume_path, fingerprint;
    if ((req.video.animate || req.video.speech) && req.decode && segments > 1) {
      resume_path = animate_resume_path(v.output);
      fingerprint = animate_fingerprint(o, identity_);
      req.animate_resume = read_animate_resume(resume_path, fingerprint, segments, req.video, tf);
      req.animate_checkpoint = [&](const pipeline::AnimateProgress& p) {
        write_animate_resume(resume_path, fingerprint, segments, p);
      };
    }

    // Dumps are written by the rank that writes this video (with cfg parallelism it sees the cond calls only).
    // Every rank of its group collects them: a split forward gathers the blocks' tokens for its dumps, a
    // collective of the sequence-parallel group. The others drop theirs after the video.
    const bool dumps = a.real && !v.dump_path.empty();
    debug::enable_dumps(dumps);
    // Animate's segments each run the steps: progress counts them all, each step named with its segment.
    Progress progress("generate", req.video.steps_run() * segments, mesh_.rank() == 0 && a.real);
    Timer t;
    dist::TrafficByKind traffic_before = dist::traffic_totals();
    pipeline::GenerationResult result = pipeline_->generate(req, [&](const pipeline::StepInfo& s) {
      // What this step sent: the totals' change since the step before (the first step: since the video began,
      // its text encoding included).
      const dist::TrafficByKind now = dist::traffic_totals();
      stats_.set_step_traffic(now, traffic_before);
      traffic_before = now;
      std::string label = s.cached ? std::string(s.expert) + ", cached" : s.expert;
      if (s.num_segments > 1)
        label = str_cat(req.video.speech ? "clip " : "segment ", s.segment + 1, "/", s.num_segments, ", ", label);
      progress.update(s.segment * s.num_steps + s.step + 1, s.seconds, label);
      if (a.real && !s.cached) step_seconds_.push_back(s.seconds);
      maybe_inject_fault(mesh_.rank(), s.segment * s.num_steps + s.step, generated_here);
    });
    progress.finish();
    if (result.segments_reused > 0 && req.decode)
      log::write_all_ranks(log::Level::kInfo,
                           str_cat(v.output, req.video.speech ? ": clips 1 to " : ": segments 1 to ",
                                   result.segments_reused, " of ", segments, " reused from ", resume_path));
    if (dumps && !req.decode) debug::take_dumps();
    ++generated_here;
    for (const auto& [phase, sec] : result.times.all()) times_.add(phase, sec);
    stats_.add_video(result.times, result.vae_peak_bytes, result.denoise_peak_bytes,
                     pipeline_->gathered_bytes_last_step(), a.real);
    stats_.add_host_reads(result.host_reads_per_step);
    if (a.real)
      for (int e = 0; e < 2; ++e) {
        step_cache_counts_[e] += result.step_cache[e];
        stats_.step_cache_held_bytes = std::max(stats_.step_cache_held_bytes, result.step_cache[e].held_bytes_peak);
      }
    if (!req.decode) continue;
    warn_truncated(result.prompt, req.video.guidance_on() ? &result.negative_prompt : nullptr, v.origin,
                   req.video.max_sequence_length);
    // A video that cannot be written fails alone: the others of this group are not in a collective with
    // this write, and the next video keeps them in step.
    try {
      ScopedPhase write_phase(times_, "write");
      writer_.write(a.video, v, pipeline::task_name(tasks_[static_cast<size_t>(a.video)]), result, t.seconds(),
                    identity_, lora_);
      queue_->set_status(a.video, VideoStatus::kGenerated);
      if (!resume_path.empty()) std::remove(resume_path.c_str());  // the video is written: its progress is done
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
  if (mesh_.rank() == 0) set_interrupt_message(queue_->interrupt_message(!opts_.prompts_file.empty()));
}

int GenerationJob::finish() {
  const std::vector<VideoStatus> status = queue_->agreed_statuses(mesh_.world());
  const bool failed = std::count(status.begin(), status.end(), VideoStatus::kFailed) > 0;

  const hsdp::HsdpStats* st = pipeline_ ? &pipeline_->hsdp_stats() : nullptr;
  stats_.set_end_of_run(st, pipeline_ ? pipeline_->disk_bytes_read() : 0, device_, times_);
  stats_.set_step_seconds(step_seconds_);
  const std::vector<RankStats> all = mesh_.world().gather(stats_);
  const int code = failed ? 1 : 0;
  if (mesh_.rank() != 0) return code;

  RunSummary summary{&all,
                     &status,
                     queue_.get(),
                     pipeline_ ? pipeline_->param_bytes_total() : 0,
                     &times_,
                     total_.seconds(),
                     &lora_,
                     settings_.step_cache,
                     settings_.step_cache_threshold,
                     step_cache_counts_};
  // The time plan beside what was measured: the largest video on the slowest rank.
  nlohmann::json time_plan;
  if (rates_ && pipeline_) {
    const auto traffic = pipeline::split_step_traffic(memory_->step_traffic(queue_->largest_video()), mesh_);
    time_plan = time_measured(
        predicted_time(*memory_, *queue_, traffic, opts_.vae_parallel ? mesh_.layout().video_size() : 1, *rates_),
        *rates_, all);
  }
  summary.time_plan = &time_plan;
  log_run_summary(opts_, summary, st, stats_);
  if (!opts_.report.empty()) {
    const nlohmann::json r = run_report(mesh_, device_.str(), identity_, *memory_, summary);
    write_file_atomically(opts_.report, r.dump(2) + "\n", writer_.may_replace_report());
    OMNI_INFO("wrote report ", opts_.report);
  }
  return code;
}

}  // namespace omni::job
