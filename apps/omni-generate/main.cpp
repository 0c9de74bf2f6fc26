// omni-generate: parse, validate, run, report. No model code lives here.
//
// Error contract (docs/DESIGN.md section 5): one clear line on stderr, the same exit code on every rank, no rank
// left waiting. Errors found while resolving options and the layout are identical on every rank (same inputs,
// same verdict), so rank 0 prints them and every rank exits normally with the code. Errors after that may hit
// one rank only; that rank prints its line and aborts the job with the code, so no other rank hangs in a
// collective.
#include <c10/util/Exception.h>
#include <mpi.h>

#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include "config/options.h"
#include "core/error.h"
#include "core/files.h"
#include "core/log.h"
#include "core/memory.h"
#include "dist/agreement.h"
#include "dist/communicator.h"
#include "dist/device.h"
#include "dist/device_mesh.h"
#include "dist/gpu_table.h"
#include "dist/parallel_config.h"
#include "dist/topology.h"
#include "job/auto_layout.h"
#include "job/generation_job.h"
#include "job/resolved_run.h"

namespace {

using omni::config::GenerateOptions;
using omni::dist::Layout;

// What names the model (and so decides the preset), from the flags or the --config file, before presets apply:
// --model and the single component files.
struct ModelFlags {
  std::string model;
  omni::io::ComponentFiles files;
};

ModelFlags model_flags_of(const omni::config::CommandLine& cli) {
  auto value = [&](const std::string& key) {
    if (auto it = cli.values.find(key); it != cli.values.end()) return it->second;
    if (auto it = cli.config.find(key); it != cli.config.end()) return it->second;
    return std::string();
  };
  ModelFlags out;
  out.model = value("model");
  for (const std::string& component : omni::io::file_components()) {
    const std::string path = value(omni::io::component_flag(component).substr(2));
    if (!path.empty()) out.files.paths[component] = path;
  }
  return out;
}

enum class Phase { kUniform, kAgreed, kRunning };

int run(int argc, char** argv, int rank, int world, Phase& phase) {
  phase = Phase::kUniform;
  auto cli = omni::config::parse_command_line(argc, argv);
  if (cli.help) {
    if (rank == 0) std::cout << cli.help_text;
    return 0;
  }
  if (cli.version) {
    if (rank == 0) std::cout << omni::dist::version_report(omni::config::tool_version());
    return 0;
  }
  // The log level as early as the flags say it: opening the model may warn (ignored config keys). An invalid
  // value is reported by resolve_options.
  if (auto it = cli.values.find("log-level"); it != cli.values.end()) {
    try {
      omni::log::set_level(omni::log::parse_level(it->second));
    } catch (const omni::Error&) {
    }
  }
  // The model (the built-in default model generated once when none is given) and the preset that fits it, then
  // the options over that preset, then the video list and what earlier runs wrote: resolved once, here, for the
  // layout choice and the job alike.
  // The --config file is read once, here: its errors are every rank's alike.
  omni::config::read_config(cli);
  const ModelFlags flags = model_flags_of(cli);
  phase = Phase::kAgreed;
  const omni::job::ResolvedModel model =
      omni::job::resolve_model(flags.model, flags.files, omni::dist::Communicator::world());
  phase = Phase::kUniform;
  const std::string& preset = model.preset;
  GenerateOptions opts = omni::config::resolve_options(cli, preset);
  omni::log::set_level(opts.log_level);
  phase = Phase::kAgreed;
  omni::job::ResolvedRun resolved = omni::job::resolve_run(opts, model, omni::dist::Communicator::world());
  // The compute degrees: given, or chosen from the work (the model's configs and the prompt list).
  const auto decision = omni::job::decide_layout(opts, resolved, omni::dist::Communicator::world());
  phase = Phase::kUniform;
  opts.parallel = decision.parallel;
  resolved.rates = decision.rates;
  if (decision.automatic)  // listings and sidecars say where the degrees came from
    for (const char* key : {"ulysses-degree", "ring-degree", "cfg-parallel-size"})
      opts.sources[key] = {omni::config::Source::kLayoutAuto, ""};
  Layout layout = omni::dist::resolve_layout(opts.parallel, world);
  OMNI_INFO("layout ", decision.line);
  OMNI_INFO("layout ", layout.summary());
  // The mesh is built in a dry run too: the communicators of every group are split, so a dry run proves the
  // layout on the real launcher (mpirun / srun) before any model is read.
  // --plan-for GPUxN: the ranks placed on nodes of N, as the cluster will place them (the dry run only).
  const int per_node = opts.plan_for.empty() ? 0 : omni::dist::parse_plan_for(opts.plan_for).per_node;
  std::vector<int> node_of;
  for (int r = 0; r < world; ++r) node_of.push_back(per_node > 0 ? r / per_node : 0);
  omni::dist::DeviceMesh mesh =
      per_node > 0 ? omni::dist::DeviceMesh(layout, omni::dist::Communicator::world(),
                                            omni::dist::Topology::of_nodes(node_of), opts.parallel.strict_topology)
                   : omni::dist::DeviceMesh(layout, omni::dist::Communicator::world(), opts.parallel.strict_topology);
  OMNI_DEBUG("mesh: ", mesh.describe());
  phase = Phase::kAgreed;
  omni::job::GenerationJob job(opts, std::move(resolved), preset, mesh, decision.line);
  // The model's configs and headers, every rank's memory plan; rank 0 prints once all is checked.
  if (opts.dry_run) return job.dry_run();

  job.prepare();
  if (job.has_work()) job.load();  // every output already written (a finished batch): nothing to load
  phase = Phase::kRunning;
  return job.run();
}

}  // namespace

int main(int argc, char** argv) {
  omni::keep_freed_host_memory();
  omni::install_temp_file_cleanup();  // a killed run (peer abort, preemption) leaves no partial file
  int code = 0;
  {
    omni::dist::MpiEnvironment mpi(&argc, &argv);
    int rank = 0, world = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    omni::log::set_rank(rank, world);

    Phase phase = Phase::kUniform;
    try {
      code = run(argc, argv, rank, world, phase);
    } catch (const omni::dist::PeerFailure& e) {
      code = e.exit_code();  // the failing rank prints the reason
    } catch (const std::exception& e) {
      omni::dist::mark_failing();  // whatever is torn down from here on aborts its communicators
      const auto* err = dynamic_cast<const omni::Error*>(&e);
      code = err ? err->exit_code() : 1;
      // LibTorch's errors carry a backtrace after their first line: keep the message, one line.
      const auto* torch_error = dynamic_cast<const c10::Error*>(&e);
      std::string message = torch_error ? torch_error->what_without_backtrace() : e.what();
      if (!err) {
        if (auto nl = message.find('\n'); nl != std::string::npos) message.resize(nl);
        message = "internal error: " + message;
      }
      if (phase == Phase::kRunning && world > 1) {
        // Other ranks may be inside a collective: abort every communicator still registered, then take the
        // whole job down with this code.
        omni::dist::abort_all(code, omni::str_cat("omni-generate: error (rank ", rank, "/", world, "): ", message));
      }
      // Uniform errors: every rank has the same one, rank 0 says it. Agreed errors: only the failing rank
      // gets here (the others see PeerFailure).
      if (phase == Phase::kAgreed || rank == 0) std::fprintf(stderr, "omni-generate: error: %s\n", message.c_str());
    }
    std::fflush(stderr);
  }
  return code;
}
