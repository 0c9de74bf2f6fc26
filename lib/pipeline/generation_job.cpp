#include "pipeline/generation_job.h"

#include <algorithm>
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
#include "core/tensor_dump.h"
#include "dist/agreement.h"
#include "dist/device.h"
#include "dist/watchdog.h"
#include "io/image_reader.h"
#include "io/image_resize.h"
#include "io/safetensors.h"
#include "io/video_writer.h"
#include "pipeline/default_model.h"

namespace omni::pipeline {
namespace {

std::vector<std::string> read_prompts_file(const std::string& path) {
  std::ifstream in(path);
  OMNI_CHECK_INPUT(in.good(), "--prompts-file: cannot open '", path, "'");
  std::vector<std::string> prompts;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos || line[b] == '#') continue;  // blank lines and comments
    prompts.push_back(line.substr(b));
  }
  OMNI_CHECK_INPUT(!prompts.empty(), "--prompts-file '", path, "' holds no prompt (one per line; # starts a comment)");
  return prompts;
}

bool set_by_user(const config::GenerateOptions& o, const std::string& key) {
  auto it = o.sources.find(key);
  return it != o.sources.end() && (it->second == "flag" || it->second.rfind("config ", 0) == 0);
}

// Test hook for the abort path: OMNI_FAULT_INJECT="RANK:STEP" makes that rank fail after that denoising step,
// while the others are inside collectives, as a real failure (out of memory, a bad device) would.
void maybe_inject_fault(int rank, int step) {
  static const char* spec = std::getenv("OMNI_FAULT_INJECT");
  if (spec == nullptr) return;
  int fault_rank = -1, fault_step = -1;
  if (std::sscanf(spec, "%d:%d", &fault_rank, &fault_step) == 2 && rank == fault_rank && step == fault_step)
    OMNI_FAIL("injected fault (OMNI_FAULT_INJECT=", spec, ") after step ", step);
}

}  // namespace

std::string indexed_path(const std::string& path, int index, int count) {
  if (count <= 1) return path;
  char suffix[16];
  std::snprintf(suffix, sizeof(suffix), "-%04d", index);
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
  return path.substr(0, dot) + suffix + path.substr(dot);
}

GenerationJob::GenerationJob(config::GenerateOptions options, std::string preset, const dist::DeviceMesh& mesh)
    : opts_(std::move(options)), preset_(std::move(preset)), mesh_(mesh) {}

GenerationJob::~GenerationJob() = default;

bool GenerationJob::is_writer() const {
  const auto& l = mesh_.layout();
  const int r = mesh_.rank();
  return l.cfg_index(r) == 0 && l.ring_index(r) == 0 && l.ulysses_index(r) == 0;
}

void GenerationJob::prepare() {
  // The built-in default model is generated (once) by rank 0 before anyone looks for it.
  if (opts_.model.empty()) model_path_ = ensure_default_model(mesh_.world());
  dist::run_agreed(mesh_.world(), [&] {
    model_ = std::make_unique<io::ModelDir>(io::ModelDir::open(model_path_.empty() ? opts_.model : model_path_));
    task_ = WanPipeline::resolve_task(model_->index(), opts_.task, !opts_.image.empty());

    if (!opts_.prompts_file.empty())
      prompts_ = read_prompts_file(opts_.prompts_file);
    else
      prompts_ = {opts_.prompt};
    OMNI_CHECK_USAGE(!(prompts_.size() == 1 && prompts_[0].empty()),
                     "no prompt: give --prompt TEXT or "
                     "--prompts-file FILE");

    if (!opts_.image.empty()) {
      at::Tensor raw = io::read_image(opts_.image);  // [H, W, 3] uint8; input error naming the file
      image_height_ = static_cast<int>(raw.size(0));
      image_width_ = static_cast<int>(raw.size(1));
    }

    // Every path this run will write, checked on every rank before any weight is read.
    const int n = static_cast<int>(prompts_.size());
    for (int i = 0; i < n; ++i) {
      outputs_.push_back(indexed_path(opts_.output, i, n));
      io::check_output_writable(outputs_.back(), opts_.overwrite);
      io::check_output_writable(outputs_.back() + ".json", opts_.overwrite);
      if (!opts_.save_tensors.empty()) {
        tensor_paths_.push_back(indexed_path(opts_.save_tensors, i, n));
        io::check_output_writable(tensor_paths_.back(), opts_.overwrite);
      }
      if (!opts_.dump_tensors.empty()) {
        dump_paths_.push_back(indexed_path(opts_.dump_tensors, i, n));
        io::check_output_writable(dump_paths_.back(), opts_.overwrite);
      }
    }
    if (!opts_.report.empty()) io::check_output_writable(opts_.report, opts_.overwrite);
  });
  OMNI_INFO("model ", model_->root(), " (", model_->index().class_name, ", task ", task_name(task_), "); ",
            prompts_.size(), " prompt(s) over ", mesh_.layout().dp, " data-parallel group(s)");
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
  dist::run_agreed(mesh_.world(), [&] {
    PipelineSettings s;
    s.device = device_;
    s.dtype = parse_dtype(opts_.dtype, "--dtype");
    s.vae_dtype = parse_dtype(opts_.vae_dtype, "--vae-dtype");
    OMNI_CHECK_USAGE(!s.device.is_cpu() || (s.dtype != at::kHalf && s.vae_dtype != at::kHalf),
                     "--dtype/--vae-dtype float16 needs --device cuda (LibTorch's CPU kernels have no half-precision "
                     "matrix products); use bfloat16 or float32 on the CPU");
    s.use_hsdp = opts_.parallel.use_hsdp;
    s.sample_solver = opts_.sample_solver;
    // The checkpoint's own flow_shift (scheduler_config.json) and boundary_ratio (model_index.json) are what
    // diffusers runs, so they win over the preset's; the preset's values fill in only where the checkpoint has
    // none. A value the user gave (flag or --config file) wins over both.
    const bool ckpt_shift = model_->component_config("scheduler").contains("flow_shift");
    s.flow_shift = set_by_user(opts_, "flow-shift") || !ckpt_shift ? opts_.flow_shift : std::nullopt;
    s.boundary_ratio =
        set_by_user(opts_, "boundary-ratio") || !model_->index().boundary_ratio ? opts_.boundary_ratio : std::nullopt;
    pipeline_ = std::make_unique<WanPipeline>(*model_, s, &mesh_);
    // Record what runs, not what the preset proposed: where the checkpoint's own flow_shift and
    // boundary_ratio won, the sidecar and --dry-run-style listings must say so to reproduce the run.
    if (!s.flow_shift) {
      opts_.flow_shift = pipeline_->flow_shift();
      opts_.sources["flow-shift"] = "checkpoint " + model_->component_config_path("scheduler");
    }
    if (!s.boundary_ratio) {
      opts_.boundary_ratio = pipeline_->boundary_ratio();
      opts_.sources["boundary-ratio"] = "checkpoint " + model_->root() + "/model_index.json";
    }

    if (!opts_.image.empty()) {
      // Without explicit sizes, the image decides them: its aspect ratio within the preset's area, snapped
      // to what the model needs (Wan2.2's rule).
      if (!set_by_user(opts_, "height") && !set_by_user(opts_, "width")) {
        auto hw = io::derive_size(image_height_, image_width_, static_cast<int64_t>(opts_.height) * opts_.width,
                                  pipeline_->spatial_multiple());
        opts_.height = static_cast<int>(hw.first);
        opts_.width = static_cast<int>(hw.second);
        OMNI_INFO("size ", opts_.height, "x", opts_.width, " from the image (", image_height_, "x", image_width_, ")");
      }
    }
    // Sizes against the model (multiples of its spatial factor, frames rounded to 4k+1) before anything runs,
    // so that a bad size is one agreed error, not an abort in the middle of the run.
    GenerationRequest sizes;
    sizes.height = opts_.height;
    sizes.width = opts_.width;
    sizes.num_frames = opts_.num_frames;
    pipeline_->check_request(sizes);
    opts_.num_frames = sizes.num_frames;
    if (!opts_.image.empty())
      image_ = io::load_conditioning_image(opts_.image, opts_.height, opts_.width);  // [1, 3, H, W] in [-1, 1]
    if (mesh_.layout().cfg == 2 && opts_.guidance_scale <= 1.0 && opts_.guidance_scale_2.value_or(1.0) <= 1.0) {
      OMNI_WARN("--cfg-parallel-size 2 with guidance off (scale <= 1): both cfg ranks compute the same branch");
    }
  });
  const auto& st = pipeline_->hsdp_stats();
  OMNI_INFO("loaded in ", times_.get("load"), " s: weights ", format_bytes(pipeline_->param_bytes_total()),
            " in all, this rank holds ", format_bytes(st.param_bytes_resident), " of the sharded models");
}

std::vector<GenerationJob::Assignment> GenerationJob::my_assignments() const {
  // Prompt i goes to dp group i % dp. Every group runs the same number of rounds so that the gathers of
  // shard groups spanning several dp groups stay in step; a group out of prompts repeats its last one.
  const int n = static_cast<int>(prompts_.size());
  const int dp = mesh_.layout().dp;
  const int me = mesh_.layout().dp_index(mesh_.rank());
  const int rounds = (n + dp - 1) / dp;
  std::vector<Assignment> out;
  int last = std::min(me, n - 1);
  for (int k = 0; k < rounds; ++k) {
    const int idx = k * dp + me;
    if (idx < n) {
      out.push_back({idx, true});
      last = idx;
    } else {
      out.push_back({last, false});
    }
  }
  return out;
}

void GenerationJob::run() {
  const bool writer = is_writer();
  for (const auto& a : my_assignments()) {
    GenerationRequest req;
    req.prompt = prompts_[static_cast<size_t>(a.prompt_index)];
    req.negative_prompt = opts_.negative_prompt;
    req.image = image_;
    req.height = opts_.height;
    req.width = opts_.width;
    req.num_frames = opts_.num_frames;
    req.num_inference_steps = opts_.num_inference_steps;
    req.guidance_scale = opts_.guidance_scale;
    req.guidance_scale_2 = opts_.guidance_scale_2;
    req.seed = opts_.seed;
    req.max_sequence_length = opts_.max_sequence_length;
    req.decode = writer && a.real;
    req.keep_tensors = writer && a.real && !opts_.save_tensors.empty();
    pipeline_->check_request(req);

    // Dumps are collected on the rank that writes this video (with cfg parallelism it sees the cond calls only).
    debug::enable_dumps(req.decode && !opts_.dump_tensors.empty());
    Progress progress("generate", req.num_inference_steps, mesh_.rank() == 0 && a.real);
    Timer t;
    GenerationResult result = pipeline_->generate(req, [&](const StepInfo& s) {
      progress.update(s.step + 1, s.seconds, s.expert);
      maybe_inject_fault(mesh_.rank(), s.step);
    });
    progress.finish();
    gathered_per_step_ = pipeline_->gathered_bytes_last_step();
    for (const auto& [phase, sec] : result.times.all()) times_.add(phase, sec);
    if (req.decode) write_outputs(a.prompt_index, result, t.seconds());
  }
  write_report();
}

void GenerationJob::write_outputs(int index, const GenerationResult& result, double seconds) {
  ScopedPhase phase(times_, "write");
  const std::string& path = outputs_[static_cast<size_t>(index)];
  io::VideoWriteOptions vo;
  vo.fps_num = opts_.fps;
  vo.crf = opts_.crf;
  vo.overwrite = opts_.overwrite;
  vo.metadata = {{"title", prompts_[static_cast<size_t>(index)]},
                 {"comment", "omni-generate; seed " + std::to_string(opts_.seed) + "; model " + model_->root()},
                 {"prompt", prompts_[static_cast<size_t>(index)]},
                 {"seed", std::to_string(opts_.seed)},
                 {"model", model_->root()}};
  io::write_video(path, result.frames[0], vo);  // [F, H, W, 3]

  if (!tensor_paths_.empty()) io::write_safetensors(tensor_paths_[static_cast<size_t>(index)], result.tensors);
  if (!dump_paths_.empty()) io::write_safetensors(dump_paths_[static_cast<size_t>(index)], debug::take_dumps());

  // The sidecar: every resolved setting and the timings, so that a video can be reproduced from it.
  nlohmann::json side;
  side["output"] = path;
  side["prompt"] = prompts_[static_cast<size_t>(index)];
  side["prompt_index"] = index;
  side["model"] = model_->root();
  side["pipeline"] = model_->index().class_name;
  side["task"] = task_name(task_);
  side["preset"] = preset_;
  side["device"] = device_.str();  // settings.device says what was asked ("auto"), this what ran
  side["frames"] = result.frames.size(1);
  side["height"] = result.frames.size(2);
  side["width"] = result.frames.size(3);
  nlohmann::json settings;
  for (const auto& spec : config::option_table()) settings[spec.name] = config::option_json(opts_, spec.name);
  side["settings"] = settings;
  side["sources"] = opts_.sources;  // where each setting came from (default, preset, config, flag, checkpoint)
  nlohmann::json timings;
  for (const auto& [k, v] : result.times.all()) timings[k] = v;
  timings["generate"] = seconds;
  side["timings"] = timings;
  side["layout"] = mesh_.layout().summary();
  write_file_atomically(path + ".json", side.dump(2) + "\n", opts_.overwrite);
  OMNI_LOG_AT(log::Level::kInfo, "wrote ", path, " (", result.frames.size(1), " frames ", result.frames.size(3), "x",
              result.frames.size(2), ", ", seconds, " s)");
  if (!log::enabled(log::Level::kInfo) || mesh_.rank() != 0) {
    log::write_all_ranks(log::Level::kInfo, str_cat("wrote ", path));
  }
}

void GenerationJob::write_report() {
  // Every rank's figures to rank 0 (a collective: every rank gets here after its last prompt).
  const auto& st = pipeline_->hsdp_stats();
  constexpr int kFields = 7;
  double mine[kFields] = {static_cast<double>(st.param_bytes_resident),
                          static_cast<double>(st.gathered_bytes_peak),
                          static_cast<double>(pipeline_->disk_bytes_read()),
                          static_cast<double>(gathered_per_step_),
                          st.gather_wait_seconds,
                          static_cast<double>(peak_rss_bytes()),
                          static_cast<double>(dist::peak_device_bytes(device_))};
  const int world = mesh_.world_size();
  std::vector<double> all(static_cast<size_t>(kFields * world));
  MPI_CHECK(MPI_Gather(mine, kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, mesh_.world().comm()));
  if (mesh_.rank() != 0) return;

  const auto& l = mesh_.layout();
  OMNI_INFO("per step this rank gathered ", format_bytes(gathered_per_step_), "; peak gathered ",
            format_bytes(st.gathered_bytes_peak), "; waited ", st.gather_wait_seconds, " s on gathers; peak RSS ",
            format_bytes(peak_rss_bytes()));
  if (opts_.report.empty()) return;
  nlohmann::json r;
  r["world_size"] = world;
  r["device"] = device_.str();
  r["layout"] = {{"dp", l.dp},
                 {"cfg", l.cfg},
                 {"ring", l.ring},
                 {"ulysses", l.ulysses},
                 {"hsdp_shard", l.hsdp_shard},
                 {"hsdp_replicate", l.hsdp_replicate}};
  r["param_bytes_total"] = pipeline_->param_bytes_total();
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
                     {"peak_device_bytes", static_cast<int64_t>(f[6])}});
  }
  r["ranks"] = ranks;
  nlohmann::json timings;
  for (const char* k : {"load", "text_encode", "image_encode", "denoise", "decode", "write"})
    timings[k] = times_.get(k);
  timings["total"] = total_.seconds();
  r["timings"] = timings;
  r["outputs"] = outputs_;
  write_file_atomically(opts_.report, r.dump(2) + "\n", opts_.overwrite);
  OMNI_INFO("wrote report ", opts_.report);
}

}  // namespace omni::pipeline
