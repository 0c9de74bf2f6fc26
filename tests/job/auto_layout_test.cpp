// job::decide_layout where its logic is (under mpirun, on the t2v-a14b-tiny fixture): degrees given by flag or
// --layout manual are kept as given; --layout auto chooses from the work (dist::choose_parallel's own rules are
// tested in tests/dist): guidance on or off decides whether a cfg pair is used, a list's length how many
// videos run at once, and a resumed list counts only the videos it has left.
#include "job/auto_layout.h"

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "config/options.h"
#include "dist/communicator.h"
#include "job/resolved_run.h"
#include "mpi_check.h"

namespace {

using omni::job::LayoutDecision;
namespace fs = std::filesystem;

omni::test_util::MpiChecks g_checks;
std::string g_model;

LayoutDecision decide(const std::vector<std::string>& args) {
  std::vector<const char*> argv{"omni-generate", "--model", g_model.c_str()};
  for (const auto& a : args) argv.push_back(a.c_str());
  const auto opts = omni::config::resolve_options(
      omni::config::parse_command_line(static_cast<int>(argv.size()), argv.data()), "wan2.2-t2v-a14b");
  const auto world = omni::dist::Communicator::world();
  const auto model = omni::job::resolve_model(opts.model, {}, world);
  const auto run = omni::job::resolve_run(opts, model, world);
  return omni::job::decide_layout(opts, run, world);
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

int run_all() {
  const auto world = omni::dist::Communicator::world();
  g_model = std::string(OMNI_TEST_DATA_DIR) + "/reference/t2v-a14b-tiny/model";
  const std::vector<std::string> video{"--height", "32", "--width", "48", "--num-frames", "9", "--output"};
  // Every rank writes the same scratch files (same bytes) into a folder of its own.
  const fs::path dir = fs::temp_directory_path() / ("auto_layout_test." + std::to_string(world.rank()));
  fs::create_directories(dir);
  auto out = [&](const std::string& name) { return (dir / name).string(); };
  auto with = [&](std::vector<std::string> extra, const std::string& output) {
    std::vector<std::string> a = video;
    a.push_back(output);
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };

  // Degrees given: kept as given, not automatic.
  LayoutDecision d = decide(with({"--prompt", "a fox", "--ulysses-degree", "2"}, out("a.mp4")));
  g_checks.truth("a given degree is kept",
                 !d.automatic && d.parallel.ulysses_degree == 2 && d.parallel.cfg_parallel_size == 1 &&
                     has(d.line, "--ulysses-degree"),
                 d.line);
  d = decide(with({"--prompt", "a fox", "--layout", "manual"}, out("a.mp4")));
  g_checks.truth("--layout manual keeps the defaults",
                 !d.automatic && d.parallel.ulysses_degree == 1 && d.parallel.cfg_parallel_size == 1 &&
                     d.line == "manual (--layout manual)",
                 d.line);

  // One video with guidance on a cfg-sized world: the two branches on different ranks.
  d = decide(with({"--prompt", "a fox", "--guidance-scale", "4"}, out("a.mp4")));
  g_checks.truth("one guided video uses a cfg pair",
                 d.automatic && (world.size() < 2 || d.parallel.cfg_parallel_size == 2) && has(d.line, "1 video"),
                 d.line);
  d = decide(with({"--prompt", "a fox", "--guidance-scale", "1"}, out("a.mp4")));
  g_checks.truth("without guidance no cfg pair", d.automatic && d.parallel.cfg_parallel_size == 1, d.line);

  // A list as long as the world: one video per rank, no split.
  std::ofstream(out("list.txt")) << "a fox\na cat\na dog\na bird\n";
  d = decide(with({"--prompts-file", out("list.txt"), "--guidance-scale", "4"}, out("v.mp4")));
  g_checks.truth("4 videos on 4 ranks run apart",
                 d.automatic && has(d.line, "4 videos") &&
                     (world.size() != 4 || (d.parallel.cfg_parallel_size == 1 && d.parallel.ulysses_degree == 1 &&
                                            d.parallel.ring_degree == 1)),
                 d.line);
  // Resumed with three written: the one left gets every rank.
  for (int i = 0; i < 3; ++i) std::ofstream(out("v-000" + std::to_string(i) + ".mp4")) << "written";
  world.barrier();
  d = decide(with({"--prompts-file", out("list.txt"), "--guidance-scale", "4"}, out("v.mp4")));
  g_checks.truth("a resumed list is laid out for what is left",
                 d.automatic && has(d.line, "1 video") && has(d.line, "(3 of 4 already written)") &&
                     (world.size() < 2 || d.parallel.cfg_parallel_size == 2),
                 d.line);
  world.barrier();
  fs::remove_all(dir);
  return g_checks.summary();
}

}  // namespace

int main(int argc, char** argv) {
  return omni::test_util::mpi_test_main(argc, argv, "auto_layout_test", run_all);
}
