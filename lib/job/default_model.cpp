#include "job/default_model.h"

#include <sys/stat.h>

#include <cstdlib>
#include <utility>

#include "core/files.h"
#include "core/log.h"
#include "dist/agreement.h"
#include "generator/checkpoint_generator.h"

namespace omni::job {
namespace {

// Bump when the generator or the spec below changes, so that a stale cached copy is never used.
constexpr const char* kDefaultModelName = "default-wan2.2-t2v-a14b-small-seed0-v1";

std::string cache_root() {
  if (const char* d = std::getenv("OMNI_CACHE_DIR"); d && *d) return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return std::string(d) + "/omni-generate";
  if (const char* d = std::getenv("HOME"); d && *d) return std::string(d) + "/.cache/omni-generate";
  return "/tmp/omni-generate-cache";
}

void make_dirs(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!partial.empty() && !is_dir(partial)) {
        OMNI_CHECK_INPUT(::mkdir(partial.c_str(), 0755) == 0 || is_dir(partial), "cannot create the cache folder '",
                         partial, "' for the built-in default model (set OMNI_CACHE_DIR to a writable folder)");
      }
    }
    if (i < path.size()) partial.push_back(path[i]);
  }
}

}  // namespace

std::string default_model_dir() {
  return cache_root() + "/" + kDefaultModelName;
}

std::string ensure_default_model(const dist::Communicator& world) {
  const std::string dir = default_model_dir();
  static bool warned = false;  // once per run (the layout choice and the job both ask)
  if (world.rank() == 0 && !std::exchange(warned, true))
    OMNI_WARN(
        "no --model given: using the built-in default model (random weights: it produces noise and exists to "
        "try the tool) at ",
        dir);
  dist::run_agreed(world, [&] {
    if (world.rank() != 0 || is_dir(dir)) return;
    OMNI_INFO("generating the built-in default model (once) ...");
    make_dirs(cache_root());
    auto spec = generator::make_preset(generator::CheckpointKind::kT2vA14b, "small");
    spec.seed = 0;
    generator::generate_checkpoint(spec, dir, /*overwrite=*/false);
  });
  return dir;
}

}  // namespace omni::job
