#include "pipeline/generation_job.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
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
#include "dist/watchdog.h"
#include "io/image_reader.h"
#include "io/image_resize.h"
#include "io/safetensors.h"
#include "io/video_writer.h"
#include "models/lora.h"
#include "pipeline/default_model.h"

namespace omni::pipeline {
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

// Whether `path` is one of our own outputs of `video` left behind by a run killed before it committed the MP4
// (sidecar and tensor files are committed first): a sidecar naming the video, or a tensor file whose metadata
// names it. A resumed run may replace those; any other existing file is the user's.
bool is_partial_output(const std::string& path, const std::string& video) {
  if (is_file(video) || !is_file(path)) return false;
  try {
    if (ends_with(path, ".json")) {
      std::ifstream in(path);
      const nlohmann::json j = nlohmann::json::parse(in);
      return j.is_object() && j.value("output", "") == video && j.contains("settings");
    }
    const io::SafetensorsFile file(path);
    auto it = file.metadata().find("output");
    return it != file.metadata().end() && it->second == video;
  } catch (const std::exception&) {
    return false;
  }
}

// A run report of ours (what finish() writes): JSON with world_size, layout and the videos' statuses.
bool is_earlier_report(const std::string& path) {
  if (!is_file(path)) return false;
  try {
    std::ifstream in(path);
    const nlohmann::json j = nlohmann::json::parse(in);
    return j.is_object() && j.contains("world_size") && j.contains("layout") && j.contains("videos");
  } catch (const std::exception&) {
    return false;
  }
}

const char* status_name(int s) {
  switch (s) {
    case 1:
      return "generated";
    case 2:
      return "skipped";
    case 3:
      return "failed";
    default:
      return "not run";
  }
}

}  // namespace

GenerationJob::GenerationJob(config::GenerateOptions options, std::string preset, const dist::DeviceMesh& mesh,
                             std::string layout_line)
    : opts_(std::move(options)), preset_(std::move(preset)), layout_line_(std::move(layout_line)), mesh_(mesh) {}

GenerationJob::~GenerationJob() = default;

bool GenerationJob::is_writer(int r) const {
  const auto& l = mesh_.layout();
  return l.cfg_index(r) == 0 && l.ring_index(r) == 0 && l.ulysses_index(r) == 0;
}

bool GenerationJob::may_replace(int video, const std::string& path) const {
  return opts_.overwrite || replaceable_[static_cast<size_t>(video)].count(path) != 0;
}

bool GenerationJob::has_work() const {
  return std::count(status_.begin(), status_.end(), Status::kPending) > 0;
}

void GenerationJob::resolve() {
  // The built-in default model is generated (once) by rank 0 before anyone looks for it.
  if (opts_.model.empty()) model_path_ = ensure_default_model(mesh_.world());
  dist::run_agreed(mesh_.world(), [&] {
    model_ = std::make_unique<io::ModelDir>(io::ModelDir::open(model_path_.empty() ? opts_.model : model_path_));
    videos_ = opts_.dry_run ? planned_video_list(opts_) : read_video_list(opts_);
    for (const auto& v : videos_) {
      int h = 0, w = 0;
      with_origin(v.origin, [&] {
        tasks_.push_back(WanPipeline::resolve_task(model_->index(), v.opts.task, !v.opts.image.empty()));
        if (!v.opts.image.empty()) {
          at::Tensor raw = io::read_image(v.opts.image);  // [H, W, 3] uint8; input error naming the file
          h = static_cast<int>(raw.size(0));
          w = static_cast<int>(raw.size(1));
        }
      });
      image_hw_.emplace_back(h, w);
      status_.push_back(Status::kPending);
      replaceable_.emplace_back();
    }
    std::vector<std::string> lora_files[2];
    for (int e = 0; e < 2; ++e)
      for (const auto& l : e == 0 ? opts_.lora : opts_.lora_2) {
        lora_records_[e].push_back({models::lora_file_path(l.path, e == 0 ? "--lora" : "--lora-2"), l.scale, ""});
        lora_files[e].push_back(lora_records_[e].back().path);
      }

    // The model's shapes for the memory plan: configs and safetensors headers, no weight.
    MemoryPlanSettings ps;
    ps.dtype = parse_dtype(opts_.dtype, "--dtype");
    ps.vae_dtype = parse_dtype(opts_.vae_dtype, "--vae-dtype");
    ps.cuda = opts_.device != "cpu" && dist::visible_gpu_count() > 0;
    const auto& l = mesh_.layout();
    ps.shard = l.use_hsdp ? l.hsdp_shard : 1;
    ps.ulysses = l.ulysses;
    ps.ring = l.ring;
    ps.cfg = l.cfg;
    ps.step_cache = parse_step_cache_mode(opts_.step_cache) != StepCacheMode::kNone;
    for (int e = 0; e < 2; ++e) ps.lora_files[e] = lora_files[e];
    planner_ = std::make_unique<MemoryPlanner>(*model_, ps);

    // Without explicit sizes, an image decides them: its aspect ratio within the preset's area, snapped to
    // what the model needs (Wan2.2's rule).
    for (size_t i = 0; i < videos_.size(); ++i) {
      auto& o = videos_[i].opts;
      if (o.image.empty() || set_by_user(o, "height") || set_by_user(o, "width")) continue;
      auto hw = io::derive_size(image_hw_[i].first, image_hw_[i].second, static_cast<int64_t>(o.height) * o.width,
                                planner_->spatial_multiple());
      o.height = static_cast<int>(hw.first);
      o.width = static_cast<int>(hw.second);
      if (mesh_.rank() == 0)
        OMNI_INFO("size ", o.height, "x", o.width, " from the image (", image_hw_[i].first, "x", image_hw_[i].second,
                  ")", videos_.size() > 1 ? " for " + videos_[i].output : "");
    }
  });
}

void GenerationJob::compute_plans() {
  plans_.clear();
  for (int r = 0; r < mesh_.world_size(); ++r) plans_.push_back(planner_->plan(work_of(r)));
}

void GenerationJob::prepare() {
  resolve();

  // Resume: rank 0 decides, for every rank, which videos are already written (one view of the filesystem).
  const bool resumable = !opts_.prompts_file.empty() && !opts_.overwrite;
  const std::vector<bool> done = already_written(videos_, opts_, mesh_.world());
  for (size_t i = 0; i < videos_.size(); ++i) {
    status_[i] = done[i] ? Status::kSkipped : Status::kPending;
    if (status_[i] == Status::kSkipped && mesh_.rank() == 0)
      OMNI_INFO("skipping ", videos_[i].output, ": already written (--overwrite regenerates it)");
  }

  dist::run_agreed(mesh_.world(), [&] {
    // Every path this run will write, checked on every rank before any weight is read.
    for (size_t i = 0; i < videos_.size(); ++i) {
      if (status_[i] != Status::kPending) continue;
      const VideoSpec& v = videos_[i];
      io::check_output_writable(v.output, opts_.overwrite);
      for (const std::string& path : {v.output + ".json", v.tensors_path, v.dump_path}) {
        if (path.empty()) continue;
        if (resumable && is_partial_output(path, v.output)) replaceable_[i].insert(path);
        io::check_output_writable(path, may_replace(static_cast<int>(i), path));
      }
    }
    if (!opts_.report.empty()) {
      // A resumed list rewrites its own earlier report (the same command, run again).
      replace_report_ = resumable && is_earlier_report(opts_.report);
      io::check_output_writable(opts_.report, opts_.overwrite || replace_report_);
    }
    // The LoRA files' digests, for the sidecars and the MP4 metadata: rank 0 reads them, all get them.
    if (mesh_.rank() == 0 && has_work())
      for (auto& records : lora_records_)
        for (auto& r : records) r.sha256 = sha256_file(r.path);
  });
  if (has_work()) {
    std::string digests;
    for (const auto& records : lora_records_)
      for (const auto& r : records) digests += r.sha256 + "\n";
    std::istringstream lines(mesh_.world().broadcast(digests));
    for (auto& records : lora_records_)
      for (auto& r : records) std::getline(lines, r.sha256);
  }
  const int skipped = static_cast<int>(std::count(status_.begin(), status_.end(), Status::kSkipped));
  update_interrupt_message();
  OMNI_INFO("model ", model_->root(), " (", model_->index().class_name, ", task ", task_name(tasks_[0]), "); ",
            videos_.size(), " video(s) over ", mesh_.layout().dp, " data-parallel group(s)",
            skipped ? str_cat(", ", skipped, " already written") : "");
  compute_plans();
  check_memory_plan();
}

RankWork GenerationJob::work_of(int rank) const {
  const auto& l = mesh_.layout();
  RankWork w;
  const int group = l.cfg * l.ring * l.ulysses;
  w.gathers_video = is_writer(rank);
  w.decode_group = opts_.vae_parallel ? group : 1;
  for (const auto& a : assignments_of(l.dp_index(rank))) {
    const auto& o = videos_[static_cast<size_t>(a.video)].opts;
    PlannedVideo v;
    v.height = o.height;
    v.width = o.width;
    v.num_frames = o.num_frames;
    v.guidance = o.guidance_scale > 1.0;  // the pipeline's do_cfg
    v.image = !o.image.empty();
    v.max_sequence_length = o.max_sequence_length;
    v.decoded = a.real && (w.gathers_video || w.decode_group > 1);
    w.videos.push_back(v);
  }
  return w;
}

std::string GenerationJob::memory_advice(const MemoryPlan& plan) const {
  const auto& l = mesh_.layout();
  const std::string& part = plan.largest_part().name;
  const bool float32 = opts_.dtype == "float32";
  std::string shard = l.use_hsdp ? str_cat("a larger --hsdp-shard-size (now ", l.hsdp_shard, ", more ranks per copy)")
                                 : "--use-hsdp with --hsdp-shard-size N (each rank holds 1/N of the weights)";
  if (part == "transformer" || part == "transformer_2" || part == "text_encoder" ||
      part.rfind("checkpoint pages", 0) == 0)
    return shard + (float32 ? ", or --dtype bfloat16" : "");
  if (part.rfind("gathered", 0) == 0 && part.find("units") != std::string::npos)
    return float32 ? "--dtype bfloat16 (a gathered block is whole on every rank)" : shard;
  if (part == "vae") return opts_.vae_dtype == "float32" ? "--vae-dtype bfloat16" : "a smaller VAE dtype";
  if (part.find("decode") != std::string::npos || part == "decoded video" || part == "frames" ||
      part == "gathered video")
    return str_cat(opts_.vae_parallel || l.cfg * l.ring * l.ulysses == 1 ? "" : "--vae-parallel, or ",
                   "a lower --height / --width or fewer --num-frames");
  return str_cat("a lower --height / --width or fewer --num-frames",
                 l.ring * l.ulysses < mesh_.world_size() ? ", or more --ulysses-degree / --ring-degree ranks" : "");
}

void GenerationJob::check_memory_plan() {
  budget_ = dist::memory_budget(opts_.device, mesh_.world());  // collective (node ranks)
  const MemoryPlan& mine = plans_[static_cast<size_t>(mesh_.rank())];
  OMNI_DEBUG("memory plan of rank ", mesh_.rank(), ": ", mine.summary());
  if (mesh_.rank() == 0) OMNI_INFO("memory plan (rank 0): ", mine.summary());
  // The rank whose plan exceeds its memory the most says so for the job.
  struct {
    double excess;
    int rank;
  } local{budget_.bytes > 0 ? static_cast<double>(mine.peak_bytes() - budget_.bytes) : -1.0, mesh_.rank()}, worst{};
  MPI_CHECK(MPI_Allreduce(&local, &worst, 1, MPI_DOUBLE_INT, MPI_MAXLOC, mesh_.world().comm()));
  if (worst.excess <= 0) return;
  std::string line;
  if (mesh_.rank() == worst.rank) {
    line = str_cat("memory plan: rank ", mesh_.rank(), " needs ", format_bytes(mine.peak_bytes()), " at its ",
                   mine.peak_phase().name, " peak, more than ", budget_.what, " (", format_bytes(budget_.bytes),
                   " for this rank); largest part: ", mine.largest_part().name, " ",
                   format_bytes(mine.largest_part().bytes), "; to fit: ", memory_advice(mine));
  }
  line = mesh_.world().broadcast(line, worst.rank);
  if (opts_.strict_memory) {
    dist::run_agreed(mesh_.world(), [&] { OMNI_FAIL_USAGE(line, " (--strict-memory)"); });
  }
  if (mesh_.rank() == 0) OMNI_WARN(line, " (--strict-memory makes this an error)");
}

int GenerationJob::dry_run(const std::function<void()>& print_header) {
  resolve();
  // The plan's report, checked on every rank before rank 0 writes it alone: an existing file is one agreed
  // error, not a failure of rank 0 after the others exited 0.
  if (!opts_.report.empty())
    dist::run_agreed(mesh_.world(), [&] { io::check_output_writable(opts_.report, opts_.overwrite); });
  compute_plans();
  check_memory_plan();
  if (mesh_.rank() != 0) return 0;
  print_header();
  const bool cuda = opts_.device != "cpu" && dist::visible_gpu_count() > 0;
  std::ostringstream os;
  os << "memory plan per rank (" << (cuda ? "GPU memory allocated" : "host memory above the process's start-up") << ", "
     << opts_.dtype << " weights, " << plans_[0].attention_kernel
     << " attention; from configs and checkpoint headers):\n";
  for (int r = 0; r < mesh_.world_size(); ++r) {
    const MemoryPlan& p = plans_[static_cast<size_t>(r)];
    int same = -1;
    for (int q = 0; q < r && same < 0; ++q)
      if (plans_[static_cast<size_t>(q)].to_json() == p.to_json()) same = q;
    if (same >= 0) {
      os << "  rank " << r << ": as rank " << same << "\n";
      continue;
    }
    os << "  rank " << r << (is_writer(r) ? " (writes videos)" : "") << ": peak " << format_bytes(p.peak_bytes())
       << " at " << p.peak_phase().name << "\n";
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
  std::fputs(os.str().c_str(), stdout);
  std::fflush(stdout);
  if (!opts_.report.empty()) {
    nlohmann::json r = report_header();
    r["dry_run"] = true;
    nlohmann::json ranks = nlohmann::json::array();
    for (int i = 0; i < mesh_.world_size(); ++i) {
      nlohmann::json entry = {{"rank", i}};
      entry.update(plans_[static_cast<size_t>(i)].to_json());
      ranks.push_back(entry);
    }
    r["ranks"] = ranks;
    write_file_atomically(opts_.report, r.dump(2) + "\n", opts_.overwrite);
    OMNI_INFO("wrote memory plan ", opts_.report);
  }
  return 0;
}

nlohmann::json GenerationJob::report_header() const {
  nlohmann::json r;
  const auto& l = mesh_.layout();
  r["world_size"] = mesh_.world_size();
  r["device"] = device_.str();
  r["layout"] = {{"dp", l.dp},
                 {"cfg", l.cfg},
                 {"ring", l.ring},
                 {"ulysses", l.ulysses},
                 {"hsdp_shard", l.hsdp_shard},
                 {"hsdp_replicate", l.hsdp_replicate},
                 {"choice", layout_line_}};
  if (budget_.bytes > 0) r["memory_budget"] = {{"bytes", budget_.bytes}, {"what", budget_.what}};
  return r;
}

void GenerationJob::load() {
  ScopedPhase phase(times_, "load");
  // The device first, agreed on its own: every rank's GPU is current and every rank knows that all the
  // others got theirs before any communicator is created (the pipeline's NCCL groups), so a rank that fails
  // here cannot leave the others waiting inside a communicator's set-up.
  dist::run_agreed(mesh_.world(), [&] {
    device_ = dist::select_device(opts_.device, mesh_.world(), opts_.allow_shared_gpu);
    dist::set_collective_timeout(opts_.collective_timeout);
  });
  baseline_rss_ = current_rss_bytes();  // before any weight is read (a GPU's context included)
  dist::run_agreed(mesh_.world(), [&] {
    PipelineSettings s;
    s.device = device_;
    s.dtype = parse_dtype(opts_.dtype, "--dtype");
    s.vae_dtype = parse_dtype(opts_.vae_dtype, "--vae-dtype");
    OMNI_CHECK_USAGE(!s.device.is_cpu() || (s.dtype != at::kHalf && s.vae_dtype != at::kHalf),
                     "--dtype/--vae-dtype float16 needs --device cuda (LibTorch's CPU kernels have no half-precision "
                     "matrix products); use bfloat16 or float32 on the CPU");
    s.use_hsdp = opts_.parallel.use_hsdp;
    s.vae_parallel = opts_.vae_parallel;
    s.step_cache = parse_step_cache_mode(opts_.step_cache);
    s.step_cache_threshold = opts_.step_cache_threshold.value_or(default_step_cache_threshold(s.step_cache));
    s.sample_solver = opts_.sample_solver;
    // The checkpoint's own flow_shift (scheduler_config.json) and boundary_ratio (model_index.json) are what
    // diffusers runs, so they win over the preset's; the preset's values fill in only where the checkpoint has
    // none. A value the user gave (flag or --config file) wins over both.
    const bool ckpt_shift = model_->component_config("scheduler").contains("flow_shift");
    s.flow_shift = set_by_user(opts_, "flow-shift") || !ckpt_shift ? opts_.flow_shift : std::nullopt;
    s.boundary_ratio =
        set_by_user(opts_, "boundary-ratio") || !model_->index().boundary_ratio ? opts_.boundary_ratio : std::nullopt;
    for (int e = 0; e < 2; ++e)
      for (const auto& r : lora_records_[e]) s.lora[e].push_back({r.path, r.scale});
    pipeline_ = std::make_unique<WanPipeline>(*model_, s, &mesh_);
    // Record what runs, not what the preset proposed: where the checkpoint's own flow_shift and
    // boundary_ratio won, the sidecar and --dry-run-style listings must say so to reproduce the run.
    for (auto& v : videos_) {
      if (!s.flow_shift) {
        v.opts.flow_shift = pipeline_->flow_shift();
        v.opts.sources["flow-shift"] = "checkpoint " + model_->component_config_path("scheduler");
      }
      if (!s.boundary_ratio) {
        v.opts.boundary_ratio = pipeline_->boundary_ratio();
        v.opts.sources["boundary-ratio"] = "checkpoint " + model_->root() + "/model_index.json";
      }
    }
    // Each video's sizes against the model (multiples of its spatial factor, frames rounded to 4k+1) before
    // anything runs, so that a bad size is one agreed error naming the line, not an abort mid-run.
    for (size_t i = 0; i < videos_.size(); ++i) {
      if (status_[i] != Status::kPending) continue;
      auto& o = videos_[i].opts;
      with_origin(videos_[i].origin, [&] {
        GenerationRequest sizes;
        sizes.height = o.height;
        sizes.width = o.width;
        sizes.num_frames = o.num_frames;
        pipeline_->check_request(sizes);
        o.num_frames = sizes.num_frames;
      });
    }
    if (mesh_.layout().cfg == 2 && opts_.guidance_scale <= 1.0 && opts_.guidance_scale_2.value_or(1.0) <= 1.0) {
      OMNI_WARN("--cfg-parallel-size 2 with guidance off (scale <= 1): both cfg ranks compute the same branch");
    }
  });
  // The load's own peaks (what LoRA merging, say, adds), before any generation raises them.
  load_peak_rss_ = peak_rss_bytes();
  load_peak_device_ = dist::peak_device_bytes(device_);
  const auto& st = pipeline_->hsdp_stats();
  OMNI_INFO("loaded in ", times_.get("load"), " s: weights ", format_bytes(pipeline_->param_bytes_total()),
            " in all, this rank holds ", format_bytes(st.param_bytes_resident), " of the sharded models");
}

std::vector<GenerationJob::Assignment> GenerationJob::my_assignments() const {
  return assignments_of(mesh_.layout().dp_index(mesh_.rank()));
}

std::vector<GenerationJob::Assignment> GenerationJob::assignments_of(int me) const {
  // The videos left to generate, video k of them to dp group k % dp. Every group runs the same number of
  // rounds so that the gathers of shard groups spanning several dp groups stay in step; a group out of
  // videos repeats its last one.
  std::vector<int> pending;
  for (size_t i = 0; i < videos_.size(); ++i)
    if (status_[i] == Status::kPending) pending.push_back(static_cast<int>(i));
  const int n = static_cast<int>(pending.size());
  const int dp = mesh_.layout().dp;
  const int rounds = (n + dp - 1) / dp;
  std::vector<Assignment> out;
  int last = n == 0 ? -1 : pending[static_cast<size_t>(std::min(me, n - 1))];
  for (int k = 0; k < rounds; ++k) {
    const int idx = k * dp + me;
    if (idx < n) {
      last = pending[static_cast<size_t>(idx)];
      out.push_back({last, true});
    } else {
      out.push_back({last, false});
    }
  }
  return out;
}

int GenerationJob::run() {
  const bool writer = is_writer();
  int generated_here = 0;  // videos this rank generated, for the kill hook
  for (const auto& a : my_assignments()) {
    const VideoSpec& v = videos_[static_cast<size_t>(a.video)];
    const auto& o = v.opts;
    GenerationRequest req;
    req.prompt = o.prompt;
    req.negative_prompt = o.negative_prompt;
    if (!o.image.empty()) {
      // One --image over a whole list is read and resized once.
      const std::string key = str_cat(o.image, "@", o.height, "x", o.width);
      if (key != image_key_) image_ = io::load_conditioning_image(o.image, o.height, o.width);  // [1, 3, H, W]
      image_key_ = key;
      req.image = image_;
    }
    req.height = o.height;
    req.width = o.width;
    req.num_frames = o.num_frames;
    req.num_inference_steps = o.num_inference_steps;
    req.guidance_scale = o.guidance_scale;
    req.guidance_scale_2 = o.guidance_scale_2;
    req.seed = o.seed;
    req.max_sequence_length = o.max_sequence_length;
    req.decode = writer && a.real;
    req.decode_band = opts_.vae_parallel && a.real;  // a repeat run's whole group skips the decode together
    req.keep_tensors = writer && a.real && !v.tensors_path.empty();
    pipeline_->check_request(req);

    // Dumps are collected on the rank that writes this video (with cfg parallelism it sees the cond calls only).
    debug::enable_dumps(req.decode && !v.dump_path.empty());
    Progress progress("generate", req.num_inference_steps, mesh_.rank() == 0 && a.real);
    Timer t;
    GenerationResult result = pipeline_->generate(req, [&](const StepInfo& s) {
      progress.update(s.step + 1, s.seconds, s.cached ? std::string(s.expert) + ", cached" : s.expert);
      maybe_inject_fault(mesh_.rank(), s.step, generated_here);
    });
    progress.finish();
    ++generated_here;
    gathered_per_step_ = pipeline_->gathered_bytes_last_step();
    for (const auto& [phase, sec] : result.times.all()) times_.add(phase, sec);
    vae_peak_bytes_ = std::max(vae_peak_bytes_, result.vae_peak_bytes);
    // Work that makes a video (a repeat run that only keeps the gathers in step is not).
    if (a.real)
      compute_seconds_ += result.times.get("text_encode") + result.times.get("image_encode") +
                          result.times.get("denoise") + result.times.get("decode");
    if (a.real)
      for (int e = 0; e < 2; ++e) {
        step_cache_counts_[e].computed += result.step_cache[e].computed;
        step_cache_counts_[e].skipped += result.step_cache[e].skipped;
      }
    if (!req.decode) continue;
    // A video that cannot be written fails alone: the others of this group are not in a collective with
    // this write, and the next video keeps them in step.
    try {
      write_outputs(a.video, result, t.seconds());
      status_[static_cast<size_t>(a.video)] = Status::kGenerated;
      update_interrupt_message();
    } catch (const std::exception& e) {
      status_[static_cast<size_t>(a.video)] = Status::kFailed;
      log::write_all_ranks(log::Level::kError, str_cat("failed to write ", v.output, ": ", e.what()));
    }
  }
  return finish();
}

void GenerationJob::update_interrupt_message() const {
  // Rank 0 says it once for the job (every rank removes its own temporary files).
  if (mesh_.rank() != 0) return;
  const auto n = [&](Status s) { return std::count(status_.begin(), status_.end(), s); };
  std::string line = str_cat("the video in progress is abandoned (no partial file is left); ", n(Status::kSkipped),
                             " video(s) written by earlier runs and ", n(Status::kGenerated), " by this rank are kept");
  if (!opts_.prompts_file.empty()) line += "; run the same command again to make the rest (written videos are skipped)";
  set_interrupt_message(line);
}

nlohmann::json GenerationJob::lora_json() const {
  nlohmann::json out = nlohmann::json::object();
  const char* names[2] = {"transformer", "transformer_2"};
  for (int e = 0; e < 2; ++e) {
    if (lora_records_[e].empty()) continue;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : lora_records_[e]) {
      const std::string name = r.path.substr(r.path.find_last_of('/') + 1);
      list.push_back({{"path", r.path}, {"name", name}, {"sha256", r.sha256}, {"scale", r.scale}});
    }
    out[names[e]] = list;
  }
  return out;
}

void GenerationJob::write_outputs(int index, const GenerationResult& result, double seconds) {
  ScopedPhase phase(times_, "write");
  const VideoSpec& v = videos_[static_cast<size_t>(index)];
  const auto& o = v.opts;
  const nlohmann::json lora = lora_json();
  io::VideoWriteOptions vo;
  vo.fps_num = o.fps;
  vo.crf = o.crf;
  vo.overwrite = opts_.overwrite;
  vo.metadata = {{"title", o.prompt},
                 {"comment", "omni-generate; seed " + std::to_string(o.seed) + "; model " + model_->root()},
                 {"prompt", o.prompt},
                 {"seed", std::to_string(o.seed)},
                 {"model", model_->root()}};
  if (!lora.empty()) vo.metadata["lora"] = lora.dump();  // each file's path, name, SHA-256 and scale

  // The tensor files name their video, so that a resumed run recognizes them as its own partial outputs.
  const std::map<std::string, std::string> tag{{"output", v.output}};
  if (!v.tensors_path.empty()) io::write_safetensors(v.tensors_path, result.tensors, tag);  // paths checked up front
  if (!v.dump_path.empty()) io::write_safetensors(v.dump_path, debug::take_dumps(), tag);

  // The sidecar: every resolved setting and the timings, so that a video can be reproduced from it. Committed
  // once the MP4 is complete under its temporary name and just before the MP4 itself, so that an MP4 on disk
  // always has its sidecar (resume treats an existing MP4 as complete) and a run killed while encoding leaves
  // neither.
  nlohmann::json side;
  side["output"] = v.output;
  side["prompt"] = o.prompt;
  side["prompt_index"] = index;
  if (v.line > 0) side["prompts_file_line"] = v.line;
  side["model"] = model_->root();
  side["pipeline"] = model_->index().class_name;
  side["task"] = task_name(tasks_[static_cast<size_t>(index)]);
  side["preset"] = preset_;
  side["device"] = device_.str();  // settings.device says what was asked ("auto"), this what ran
  side["frames"] = result.frames.size(1);
  side["height"] = result.frames.size(2);
  side["width"] = result.frames.size(3);
  if (!lora.empty()) side["lora"] = lora;
  nlohmann::json settings;
  for (const auto& spec : config::option_table()) settings[spec.name] = config::option_json(o, spec.name);
  side["settings"] = settings;
  side["sources"] = o.sources;  // where each setting came from (default, preset, config, flag, line, checkpoint)
  nlohmann::json timings;
  for (const auto& [k, val] : result.times.all()) timings[k] = val;
  timings["generate"] = seconds;
  side["timings"] = timings;
  side["layout"] = mesh_.layout().summary();
  side["layout_choice"] = layout_line_;
  const std::string side_text = side.dump(2) + "\n";
  vo.before_commit = [&] {
    write_file_atomically(v.output + ".json", side_text, may_replace(index, v.output + ".json"));
  };
  io::write_video(v.output, result.frames[0], vo);  // [F, H, W, 3]
  OMNI_LOG_AT(log::Level::kInfo, "wrote ", v.output, " (", result.frames.size(1), " frames ", result.frames.size(3),
              "x", result.frames.size(2), ", ", seconds, " s)");
  if (!log::enabled(log::Level::kInfo) || mesh_.rank() != 0) {
    log::write_all_ranks(log::Level::kInfo, str_cat("wrote ", v.output));
  }
}

int GenerationJob::finish() {
  // Every video's status (each written by one rank; skipped ones known to all) and every rank's figures.
  std::vector<int> status(videos_.size());
  for (size_t i = 0; i < videos_.size(); ++i) status[i] = static_cast<int>(status_[i]);
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, status.data(), static_cast<int>(status.size()), MPI_INT, MPI_MAX,
                          mesh_.world().comm()));
  int counts[4] = {0, 0, 0, 0};
  for (int s : status) ++counts[s];
  std::string failed_list;
  for (size_t i = 0; i < videos_.size(); ++i)
    if (status[i] == static_cast<int>(Status::kFailed))
      failed_list += (failed_list.empty() ? "" : ", ") + videos_[i].output;

  hsdp::HsdpStats none;
  const auto& st = pipeline_ ? pipeline_->hsdp_stats() : none;
  constexpr int kFields = 13;
  double mine[kFields] = {static_cast<double>(st.param_bytes_resident),
                          static_cast<double>(st.gathered_bytes_peak),
                          static_cast<double>(pipeline_ ? pipeline_->disk_bytes_read() : 0),
                          static_cast<double>(gathered_per_step_),
                          st.gather_wait_seconds,
                          static_cast<double>(peak_rss_bytes()),
                          static_cast<double>(dist::peak_device_bytes(device_)),
                          static_cast<double>(load_peak_rss_),
                          static_cast<double>(load_peak_device_),
                          static_cast<double>(vae_peak_bytes_),
                          times_.get("decode"),
                          static_cast<double>(baseline_rss_),
                          compute_seconds_};
  const int world = mesh_.world_size();
  std::vector<double> all(static_cast<size_t>(kFields * world));
  MPI_CHECK(MPI_Gather(mine, kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, mesh_.world().comm()));
  const int code = counts[static_cast<int>(Status::kFailed)] > 0 ? 1 : 0;
  if (mesh_.rank() != 0) return code;

  if (opts_.step_cache != "none") {
    const auto& c = step_cache_counts_;
    OMNI_INFO("step cache (", opts_.step_cache, "): ", c[0].computed + c[1].computed, " transformer calls computed, ",
              c[0].skipped + c[1].skipped, " skipped (transformer ", c[0].skipped, ", transformer_2 ", c[1].skipped,
              ")");
  }
  if (pipeline_) {
    OMNI_INFO("per step this rank gathered ", format_bytes(gathered_per_step_), "; peak gathered ",
              format_bytes(st.gathered_bytes_peak), "; waited ", st.gather_wait_seconds, " s on gathers; peak RSS ",
              format_bytes(peak_rss_bytes()));
  }
  const int generated = counts[1], skipped = counts[2], failed = counts[3];
  if (videos_.size() > 1 || skipped + failed > 0)
    OMNI_INFO("summary: ", generated, " generated, ", skipped, " skipped (already written), ", failed, " failed");
  if (failed > 0)
    log::write(log::Level::kError, str_cat(failed, " of ", videos_.size(), " video(s) failed: ", failed_list));

  if (!opts_.report.empty()) {
    nlohmann::json r = report_header();
    r["param_bytes_total"] = pipeline_ ? pipeline_->param_bytes_total() : 0;
    nlohmann::json ranks = nlohmann::json::array();
    for (int i = 0; i < world; ++i) {
      const double* f = &all[static_cast<size_t>(i * kFields)];
      ranks.push_back({{"rank", i},
                       {"param_bytes_resident", static_cast<int64_t>(f[0])},
                       {"gathered_bytes_peak", static_cast<int64_t>(f[1])},
                       {"disk_bytes_read", static_cast<int64_t>(f[2])},
                       {"gathered_bytes_per_step", static_cast<int64_t>(f[3])},
                       {"gather_wait_seconds", f[4]},
                       {"peak_rss_bytes", static_cast<int64_t>(f[5])},
                       {"peak_device_bytes", static_cast<int64_t>(f[6])},
                       {"load_peak_rss_bytes", static_cast<int64_t>(f[7])},
                       {"load_peak_device_bytes", static_cast<int64_t>(f[8])},
                       {"vae_peak_bytes", static_cast<int64_t>(f[9])},
                       {"decode_seconds", f[10]},
                       {"baseline_rss_bytes", static_cast<int64_t>(f[11])},
                       {"compute_seconds", f[12]}});
      if (device_.is_cuda()) ranks.back()["cuda_peak_allocated_bytes"] = static_cast<int64_t>(f[6]);
      if (static_cast<size_t>(i) < plans_.size()) ranks.back().update(plans_[static_cast<size_t>(i)].to_json());
    }
    r["ranks"] = ranks;
    nlohmann::json timings;
    for (const char* k : {"load", "text_encode", "image_encode", "denoise", "decode", "write"})
      timings[k] = times_.get(k);
    timings["total"] = total_.seconds();
    r["timings"] = timings;
    nlohmann::json outputs = nlohmann::json::array(), videos = nlohmann::json::array();
    for (size_t i = 0; i < videos_.size(); ++i) {
      outputs.push_back(videos_[i].output);
      nlohmann::json entry = {{"output", videos_[i].output}, {"status", status_name(status[i])}};
      if (videos_[i].line > 0) entry["line"] = videos_[i].line;
      videos.push_back(entry);
    }
    r["outputs"] = outputs;
    r["videos"] = videos;
    r["summary"] = {{"generated", generated}, {"skipped", skipped}, {"failed", failed}};
    if (!lora_json().empty()) r["lora"] = lora_json();
    if (opts_.step_cache != "none") {
      // Rank 0's transformer calls over its videos (every rank of its group took the same decisions).
      const auto& c = step_cache_counts_;
      r["step_cache"] = {{"mode", opts_.step_cache},
                         {"threshold", opts_.step_cache_threshold.value_or(
                                           default_step_cache_threshold(parse_step_cache_mode(opts_.step_cache)))},
                         {"computed", c[0].computed + c[1].computed},
                         {"skipped", c[0].skipped + c[1].skipped},
                         {"transformer", {{"computed", c[0].computed}, {"skipped", c[0].skipped}}},
                         {"transformer_2", {{"computed", c[1].computed}, {"skipped", c[1].skipped}}}};
    }
    write_file_atomically(opts_.report, r.dump(2) + "\n", opts_.overwrite || replace_report_);
    OMNI_INFO("wrote report ", opts_.report);
  }
  return code;
}

}  // namespace omni::pipeline
