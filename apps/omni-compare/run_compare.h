// Regression comparison of two whole runs (omni-compare RUN_A RUN_B, docs/comparisons.md): two output folders
// of omni-generate (or two JSON Lines manifests naming videos), their videos paired, each pair's frames measured
// (PSNR, SSIM, mean absolute difference, LPIPS with weights, the latents' cosine where both runs saved them),
// the two sidecars' settings compared, and a verdict per pair against thresholds. B is the reference (the
// golden run), A the run under test, as for two files.
#pragma once

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace omni::compare {

class Lpips;

// The gates a pair must pass; an unset one is not judged. Frame metrics are judged on the pair's worst frame.
struct Thresholds {
  std::optional<double> psnr_min;            // dB, lowest per-frame PSNR
  std::optional<double> ssim_min;            // lowest per-frame SSIM
  std::optional<double> mad_max;             // 8-bit levels: highest per-frame mean |A - B|
  std::optional<double> max_abs_max;         // 8-bit levels: largest single difference (the exact profile: 0)
  std::optional<double> lpips_max;           // highest per-frame LPIPS (judged only with --lpips-weights)
  std::optional<double> latent_cosine_min;   // the final latents' cosine (judged where both runs saved them)
  std::optional<double> latent_max_abs_max;  // the final latents' largest difference
  nlohmann::json to_json() const;
};

// --profile: thresholds for the usual comparisons.
struct Profile {
  std::string name;
  std::string use;  // one line: what it is for
  Thresholds thresholds;
};
const std::vector<Profile>& profiles();
// The profile named `name`; a usage error naming --profile and the choices otherwise.
const Profile& find_profile(const std::string& name);

// One video of a run.
struct RunVideo {
  std::string name;           // how the run names it: its path relative to the folder, or as the manifest has it
  std::string path;           // the video file
  std::string sidecar_path;   // "<video>.json" when it exists, else ""
  nlohmann::json sidecar;     // its content; null when there is none or it cannot be read
  std::string sidecar_error;  // why an existing sidecar could not be read
  std::string tensors;        // its --save-tensors file when one exists, else ""
  std::string prompt;         // from the sidecar (or the manifest line); for pairing by prompt and seed
  std::optional<int64_t> seed;
};

struct Run {
  std::string source;  // the folder or manifest as given
  std::vector<RunVideo> videos;
};

// The videos of a folder (searched recursively; hidden files, which are a killed run's leftovers, skipped) or of
// a JSON Lines manifest (one object per line with "output" or "video": the video's path, relative to the
// manifest's folder; optional "prompt", "seed", "tensors"). Input errors (exit 3): a missing or unreadable
// folder or manifest, a bad manifest line, no video at all.
Run read_run(const std::string& path);

// A pair of videos, or a video one run has and the other lacks.
struct Pairing {
  struct Pair {
    int a = -1, b = -1;     // indices into the runs' videos; -1 when one side lacks it
    std::string paired_by;  // "name", "prompt and seed"
  };
  std::vector<Pair> pairs;  // in B's order, then A's videos B lacks
};
// Videos paired by name where the sidecars agree on prompt and seed (or one has none), then the rest by prompt
// and seed where exactly one video of each run has them, then what is left by name: a list with a line
// inserted, its videos renumbered, still pairs each video with its own.
Pairing pair_runs(const Run& a, const Run& b);

// One resolved setting that differs between two sidecars ("settings.seed", "layout", "lora", ...).
struct SettingDiff {
  std::string key;
  nlohmann::json a, b;  // null: absent on that side
};
// What differs between two sidecars, leaving out what names the run rather than the video (its output paths,
// timings, where each setting came from).
std::vector<SettingDiff> settings_diff(const nlohmann::json& a, const nlohmann::json& b);
// The keys of `diff` that make two videos different videos rather than a regression (prompt, seed, size).
std::vector<std::string> incomparable_keys(const std::vector<SettingDiff>& diff);

enum class Verdict {
  kPass,           // within every threshold
  kRegression,     // a metric outside its threshold
  kFailed,         // could not be compared: a video that does not decode, sizes or frame counts that differ
  kNotComparable,  // the sidecars say it is another video (prompt, seed or size differ): listed, not judged
  kMissing,        // the reference (B) has it, A does not
  kNew,            // A has it, the reference does not
};
const char* verdict_name(Verdict v);  // "pass", "regression", "failed", "not comparable", "missing", "new"
// Whether the verdict fails the comparison (exit 1); kMissing only without --allow-missing.
bool verdict_fails(Verdict v, bool allow_missing);

struct FrameMetrics {
  double psnr = 0;     // dB over RGB in 8-bit levels; +inf when equal
  double ssim = 0;     // ssim.h; NaN for frames under 11x11
  double mad = 0;      // mean |A - B| in 8-bit levels
  double max_abs = 0;  // largest |A - B| in 8-bit levels
  double lpips = NAN;  // NaN without LPIPS weights
};

struct PairResult {
  std::string name;  // B's name (A's when B lacks it)
  std::string a_name, b_name, a_path, b_path;
  std::string paired_by;
  Verdict verdict = Verdict::kPass;
  std::vector<std::string> reasons;  // for every verdict but pass: why, one line each
  std::vector<FrameMetrics> frames;  // per compared frame
  int64_t a_frames = 0, b_frames = 0, a_width = 0, a_height = 0, b_width = 0, b_height = 0;
  bool a_decodes = true, b_decodes = true;
  // Over the frames (NaN / 0 when none was compared).
  double min_psnr = NAN, mean_psnr = NAN, min_ssim = NAN, mean_ssim = NAN, max_mad = NAN, mean_mad = NAN, max_abs = NAN,
         max_lpips = NAN, mean_lpips = NAN;
  int worst_frame = -1;  // the frame of the lowest PSNR
  std::optional<double> latent_cosine, latent_max_abs;
  bool sidecars = false;  // both have one: `settings` is their difference
  std::vector<SettingDiff> settings;
  std::string sheet;   // the contact sheet PNG's file name in the report folder, "" when none
  double seconds = 0;  // how long its comparison took
};

struct CompareOptions {
  Thresholds thresholds;
  const Lpips* lpips = nullptr;  // LPIPS per frame when set
  std::string sheet_dir;         // write each pair's contact sheet (PNG) here when set
};

// Compares one pair of `pairing` (decoding, metrics, settings, verdict); never throws for a bad video: the
// pair fails with the reason.
PairResult compare_pair(const Run& a, const Run& b, const Pairing::Pair& pair, int index, const CompareOptions& o);

// The contact sheet of a pair: rows of A | B | heat map of |A - B| for the frames `rows` (uint8 [F, H, W, 3]
// each), scaled down to at most `max_width` pixels per image; written as PNG to `path`. The heat map's full
// scale is `heat_levels` 8-bit levels of difference.
void write_contact_sheet(const std::string& path, const at::Tensor& a, const at::Tensor& b,
                         const std::vector<int64_t>& rows, int max_width, double heat_levels);
inline constexpr double kHeatLevels = 32.0;

}  // namespace omni::compare
