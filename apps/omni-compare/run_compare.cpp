#include "run_compare.h"

// stb_image_write for the contact sheets' PNGs, its functions private to this file; its own code is not held to
// our warnings.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/files.h"
#include "io/safetensors.h"
#include "io/video_reader.h"
#include "lpips.h"
#include "ssim.h"

namespace omni::compare {
namespace {

namespace fs = std::filesystem;

const std::set<std::string>& video_extensions() {
  static const std::set<std::string> ext{".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi"};
  return ext;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// Fills the sidecar, prompt, seed and tensors of `v` from "<video>.json" when it exists; `root` is the run's
// folder.
void read_sidecar(RunVideo& v, const fs::path& root) {
  const std::string path = v.path + ".json";
  if (!is_file(path)) return;
  v.sidecar_path = path;
  try {
    std::ifstream in(path);
    v.sidecar = nlohmann::json::parse(in);
    OMNI_CHECK_INPUT(v.sidecar.is_object(), path, ": a sidecar should be a JSON object");
  } catch (const std::exception& e) {
    v.sidecar = nullptr;
    v.sidecar_error = e.what();
    return;
  }
  if (v.sidecar.contains("prompt") && v.sidecar["prompt"].is_string()) v.prompt = v.sidecar["prompt"];
  const nlohmann::json& settings = v.sidecar.value("settings", nlohmann::json::object());
  if (settings.contains("seed") && settings["seed"].is_number_integer()) v.seed = settings["seed"].get<int64_t>();
  // The tensors file as the run named it, relative to where it ran: beside the video, in the run's folder (a
  // run made from inside it), or where the comparison runs (a run made from here), since runs are compared
  // after being moved or copied as folders.
  if (v.tensors.empty() && v.sidecar.contains("tensors") && v.sidecar["tensors"].is_string()) {
    const fs::path recorded(v.sidecar["tensors"].get<std::string>());
    for (const fs::path& p : {fs::path(v.path).parent_path() / recorded.filename(), root / recorded, recorded})
      if (is_file(p.string())) {
        v.tensors = p.string();
        break;
      }
  }
}

Run read_folder(const std::string& root) {
  Run run;
  run.source = root;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    const std::string leaf = p.filename().string();
    if (!leaf.empty() && leaf[0] == '.') {  // hidden: a killed run's ".NAME.partial-*" leftovers, .git, ...
      if (it->is_directory()) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file() || !video_extensions().count(lower(p.extension().string()))) continue;
    RunVideo v;
    v.path = p.string();
    v.name = p.lexically_relative(root).generic_string();  // a symlinked video keeps its own name
    read_sidecar(v, root);
    run.videos.push_back(std::move(v));
  }
  OMNI_CHECK_INPUT(!ec, root, ": cannot read the folder: ", ec.message());
  std::sort(run.videos.begin(), run.videos.end(), [](const RunVideo& x, const RunVideo& y) { return x.name < y.name; });
  return run;
}

Run read_manifest(const std::string& manifest) {
  Run run;
  run.source = manifest;
  std::ifstream in(manifest);
  OMNI_CHECK_INPUT(in.good(), manifest, ": cannot read the manifest");
  const fs::path dir = fs::path(manifest).parent_path();
  auto resolve = [&](const std::string& p) { return fs::path(p).is_absolute() ? p : (dir / p).string(); };
  std::set<std::string> names;
  int number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      OMNI_FAIL_INPUT(manifest, " line ", number, ": not a JSON object: ", e.what());
    }
    OMNI_CHECK_INPUT(j.is_object(), manifest, " line ", number, ": expected a JSON object, got ", j.type_name());
    const char* key = j.contains("output") ? "output" : "video";
    OMNI_CHECK_INPUT(j.contains(key) && j[key].is_string() && !j[key].get<std::string>().empty(), manifest, " line ",
                     number, ": no \"output\" (the video's path, relative to the manifest's folder)");
    RunVideo v;
    v.name = j[key].get<std::string>();
    OMNI_CHECK_INPUT(names.insert(v.name).second, manifest, " line ", number, ": \"", v.name,
                     "\" is named by an earlier line too");
    v.path = resolve(v.name);
    if (j.contains("tensors") && j["tensors"].is_string()) v.tensors = resolve(j["tensors"]);
    read_sidecar(v, dir);
    // The line's own prompt and seed (a Python run's manifest has no sidecars) where the sidecar has none.
    if (v.prompt.empty() && j.contains("prompt") && j["prompt"].is_string()) v.prompt = j["prompt"];
    if (!v.seed && j.contains("seed") && j["seed"].is_number_integer()) v.seed = j["seed"].get<int64_t>();
    run.videos.push_back(std::move(v));
  }
  return run;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  int n = 0;
  for (double x : v)
    if (!std::isnan(x)) sum += x, ++n;
  return n ? sum / n : NAN;
}

std::string fmt(double v, int precision = 4) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (std::isnan(v)) return "n/a";
  std::ostringstream os;
  os << std::setprecision(precision) << v;
  return os.str();
}

// The latents' cosine and largest difference, or a note saying why they were not compared.
void compare_latents(const RunVideo& a, const RunVideo& b, PairResult& r, std::vector<std::string>& notes) {
  if (a.tensors.empty() || b.tensors.empty()) return;
  try {
    const io::SafetensorsFile fa(a.tensors), fb(b.tensors);
    if (!fa.contains("latents") || !fb.contains("latents")) {
      notes.push_back("no 'latents' tensor in both tensor files: latents not compared");
      return;
    }
    const at::Tensor la = fa.read("latents", at::kDouble).flatten(), lb = fb.read("latents", at::kDouble).flatten();
    if (fa.info("latents").shape != fb.info("latents").shape) {
      notes.push_back("the latents' shapes differ: latents not compared");
      return;
    }
    const double na = la.norm().item<double>(), nb = lb.norm().item<double>();
    r.latent_cosine = (na > 0 && nb > 0) ? (la * lb).sum().item<double>() / (na * nb) : (na == nb ? 1.0 : 0.0);
    r.latent_max_abs = la.numel() ? (la - lb).abs().max().item<double>() : 0.0;
  } catch (const std::exception& e) {
    notes.push_back(str_cat("latents not compared: ", e.what()));
  }
}

// The gates of `t` on r's figures: a reason per gate missed.
void judge(const Thresholds& t, bool have_lpips, PairResult& r) {
  auto miss = [&](const std::string& why) {
    r.reasons.push_back(why);
    if (r.verdict == Verdict::kPass) r.verdict = Verdict::kRegression;
  };
  if (t.psnr_min && !(r.min_psnr >= *t.psnr_min))
    miss(str_cat("min PSNR ", fmt(r.min_psnr), " dB < ", fmt(*t.psnr_min), " dB (frame ", r.worst_frame, ")"));
  if (t.ssim_min && !(r.min_ssim >= *t.ssim_min))
    miss(str_cat("min SSIM ", fmt(r.min_ssim, 6), " < ", fmt(*t.ssim_min, 6)));
  if (t.mad_max && !(r.max_mad <= *t.mad_max))
    miss(str_cat("max per-frame mean abs difference ", fmt(r.max_mad), " > ", fmt(*t.mad_max), " levels"));
  if (t.max_abs_max && !(r.max_abs <= *t.max_abs_max))
    miss(str_cat("max abs difference ", fmt(r.max_abs), " > ", fmt(*t.max_abs_max), " levels"));
  if (have_lpips && t.lpips_max && !(r.max_lpips <= *t.lpips_max))
    miss(str_cat("max LPIPS ", fmt(r.max_lpips), " > ", fmt(*t.lpips_max)));
  if (r.latent_cosine && t.latent_cosine_min && !(*r.latent_cosine >= *t.latent_cosine_min))
    miss(str_cat("latents' cosine ", fmt(*r.latent_cosine, 8), " < ", fmt(*t.latent_cosine_min, 8)));
  if (r.latent_max_abs && t.latent_max_abs_max && !(*r.latent_max_abs <= *t.latent_max_abs_max))
    miss(str_cat("latents' max abs difference ", fmt(*r.latent_max_abs), " > ", fmt(*t.latent_max_abs_max)));
}

}  // namespace

nlohmann::json Thresholds::to_json() const {
  nlohmann::json j = nlohmann::json::object();
  auto put = [&](const char* k, const std::optional<double>& v) { j[k] = v ? nlohmann::json(*v) : nullptr; };
  put("psnr_min", psnr_min);
  put("ssim_min", ssim_min);
  put("mad_max", mad_max);
  put("max_abs_max", max_abs_max);
  put("lpips_max", lpips_max);
  put("latent_cosine_min", latent_cosine_min);
  put("latent_max_abs_max", latent_max_abs_max);
  return j;
}

const std::vector<Profile>& profiles() {
  // kernel is the default: SGLang-Diffusion's CI gates (SSIM >= 0.92, PSNR >= 24 dB, mean abs <= 10 levels),
  // and an LPIPS bound above the 0.12-0.24 TensorRT-LLM measures across attention kernels alone. layout: what
  // another parallel layout may move the frames: the same video up to the rounding of reductions done in
  // another order, which float32 keeps to a level at a few pixels and bfloat16 compounds over the steps
  // (measured, tiny model at 64x64 in bfloat16, CFG on 2 ranks of one thread against one rank of two threads:
  // 37.5 dB, SSIM 0.991, MAD 2.5 levels, latents' cosine above 0.99999; float32: bit-equal). model: a new checkpoint or
  // LoRA, same seed: the same scene, other details.
  static const std::vector<Profile> all = [] {
    std::vector<Profile> p(4);
    p[0].name = "exact";
    p[0].use = "bit-equal frames and latents (the same build, model and layout run twice)";
    p[0].thresholds.max_abs_max = 0.0;
    p[0].thresholds.latent_max_abs_max = 0.0;
    p[1].name = "layout";
    p[1].use = "another parallel layout (the same video up to float rounding)";
    p[1].thresholds = {35.0, 0.98, 3.0, std::nullopt, 0.05, 0.9999, std::nullopt};
    p[2].name = "kernel";
    p[2].use = "other attention kernels, GPUs or dtypes (the default)";
    p[2].thresholds = {24.0, 0.92, 10.0, std::nullopt, 0.3, 0.95, std::nullopt};
    p[3].name = "model";
    p[3].use = "a new checkpoint or LoRA, same prompts and seeds";
    p[3].thresholds = {15.0, 0.5, 40.0, std::nullopt, 0.6, 0.5, std::nullopt};
    return p;
  }();
  return all;
}

const Profile& find_profile(const std::string& name) {
  std::string names;
  for (const Profile& p : profiles()) {
    if (p.name == name) return p;
    names += (names.empty() ? "" : ", ") + p.name;
  }
  OMNI_FAIL_USAGE("--profile ", name, ": expected one of ", names);
}

Run read_run(const std::string& path) {
  Run run;
  if (is_dir(path))
    run = read_folder(path);
  else if (is_file(path) && ends_with(lower(path), ".jsonl"))
    run = read_manifest(path);
  else
    OMNI_FAIL_INPUT(path, ": ", is_file(path) ? "not a folder or a JSON Lines manifest (.jsonl)" : "no such folder",
                    " (a run to compare is an output folder of omni-generate, or a .jsonl naming its videos)");
  OMNI_CHECK_INPUT(
      !run.videos.empty(), path, ": no video in it (looked for ",
      [] {
        std::string e;
        for (const auto& x : video_extensions()) e += (e.empty() ? "" : " ") + x;
        return e;
      }(),
      ")");
  return run;
}

Pairing pair_runs(const Run& a, const Run& b) {
  // Three passes, so that a list with a line inserted (every later video renumbered: video-0003.mp4 is now
  // another prompt) still pairs each video with its own: (1) by name where the sidecars do not say otherwise,
  // (2) the rest by prompt and seed where each run has exactly one video of them, (3) what is left by name (the
  // sidecars then say why it is another video).
  auto key_of = [](const RunVideo& v) -> std::optional<std::pair<std::string, int64_t>> {
    if (!v.seed || v.prompt.empty()) return std::nullopt;
    return std::make_pair(v.prompt, *v.seed);
  };
  std::map<std::string, int> a_by_name;
  for (int i = 0; i < static_cast<int>(a.videos.size()); ++i) a_by_name[a.videos[static_cast<size_t>(i)].name] = i;
  std::vector<int> b_to_a(b.videos.size(), -1);
  std::vector<std::string> how(b.videos.size());
  std::vector<bool> a_used(a.videos.size(), false);
  auto link = [&](size_t j, int i, const char* by) {
    b_to_a[j] = i, how[j] = by, a_used[static_cast<size_t>(i)] = true;
  };
  for (size_t j = 0; j < b.videos.size(); ++j) {
    auto it = a_by_name.find(b.videos[j].name);
    if (it == a_by_name.end()) continue;
    const auto ka = key_of(a.videos[static_cast<size_t>(it->second)]), kb = key_of(b.videos[j]);
    if (!ka || !kb || *ka == *kb) link(j, it->second, "name");
  }
  std::map<std::pair<std::string, int64_t>, std::vector<int>> a_by_key, b_by_key;
  for (size_t i = 0; i < a.videos.size(); ++i)
    if (auto k = key_of(a.videos[i]); k && !a_used[i]) a_by_key[*k].push_back(static_cast<int>(i));
  for (size_t j = 0; j < b.videos.size(); ++j)
    if (auto k = key_of(b.videos[j]); k && b_to_a[j] < 0) b_by_key[*k].push_back(static_cast<int>(j));
  for (const auto& [key, bs] : b_by_key) {
    auto it = a_by_key.find(key);
    if (bs.size() == 1 && it != a_by_key.end() && it->second.size() == 1)
      link(static_cast<size_t>(bs[0]), it->second[0], "prompt and seed");
  }
  for (size_t j = 0; j < b.videos.size(); ++j) {
    auto it = a_by_name.find(b.videos[j].name);
    if (b_to_a[j] < 0 && it != a_by_name.end() && !a_used[static_cast<size_t>(it->second)]) link(j, it->second, "name");
  }
  Pairing out;
  for (size_t j = 0; j < b.videos.size(); ++j) out.pairs.push_back({b_to_a[j], static_cast<int>(j), how[j]});
  for (size_t i = 0; i < a.videos.size(); ++i)
    if (!a_used[i]) out.pairs.push_back({static_cast<int>(i), -1, ""});
  return out;
}

std::vector<SettingDiff> settings_diff(const nlohmann::json& a, const nlohmann::json& b) {
  // What names the run or the file rather than the video: its paths, timings, and where each setting came from.
  // layout_choice says how the run chose its layout ("auto: 7 videos on 1 rank"): the layout itself is kept.
  static const std::set<std::string> skip_top{"output",  "timings", "prompt_index", "prompts_file_line",
                                              "sources", "tensors", "layout_choice"};
  static const std::set<std::string> skip_settings{"output",    "report",    "save-tensors", "dump-tensors",
                                                   "overwrite", "log-level", "prompts-file", "dry-run"};
  std::map<std::string, std::pair<nlohmann::json, nlohmann::json>> flat;
  auto add = [&](const nlohmann::json& side, bool is_a) {
    if (!side.is_object()) return;
    for (const auto& [k, v] : side.items()) {
      if (skip_top.count(k)) continue;
      if (k == "settings" && v.is_object()) {
        for (const auto& [sk, sv] : v.items())
          if (!skip_settings.count(sk)) (is_a ? flat["settings." + sk].first : flat["settings." + sk].second) = sv;
        continue;
      }
      (is_a ? flat[k].first : flat[k].second) = v;
    }
  };
  add(a, true);
  add(b, false);
  std::vector<SettingDiff> out;
  for (const auto& [k, v] : flat)
    if (v.first != v.second) out.push_back({k, v.first, v.second});
  return out;
}

std::vector<std::string> incomparable_keys(const std::vector<SettingDiff>& diff) {
  static const std::set<std::string> keys{"prompt",          "settings.prompt", "settings.seed",
                                          "height",          "width",           "frames",
                                          "settings.height", "settings.width",  "settings.num-frames"};
  std::vector<std::string> out;
  for (const auto& d : diff)
    if (keys.count(d.key)) out.push_back(d.key);
  return out;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "pass";
    case Verdict::kRegression:
      return "regression";
    case Verdict::kFailed:
      return "failed";
    case Verdict::kNotComparable:
      return "not comparable";
    case Verdict::kMissing:
      return "missing";
    case Verdict::kNew:
      return "new";
  }
  return "?";
}

bool verdict_fails(Verdict v, bool allow_missing) {
  return v == Verdict::kRegression || v == Verdict::kFailed || (v == Verdict::kMissing && !allow_missing);
}

PairResult compare_pair(const Run& a, const Run& b, const Pairing::Pair& pair, int index, const CompareOptions& o) {
  PairResult r;
  r.paired_by = pair.paired_by;
  const RunVideo* va = pair.a >= 0 ? &a.videos[static_cast<size_t>(pair.a)] : nullptr;
  const RunVideo* vb = pair.b >= 0 ? &b.videos[static_cast<size_t>(pair.b)] : nullptr;
  if (va) r.a_name = va->name, r.a_path = va->path;
  if (vb) r.b_name = vb->name, r.b_path = vb->path;
  r.name = vb ? vb->name : va->name;
  if (!va) {
    r.verdict = Verdict::kMissing;
    r.reasons.push_back("the reference has it; A has no video of that name (nor of its prompt and seed)");
    return r;
  }
  if (!vb) {
    r.verdict = Verdict::kNew;
    r.reasons.push_back("A has it; the reference has no video of that name (nor of its prompt and seed)");
    return r;
  }
  if (!va->sidecar.is_null() && !vb->sidecar.is_null()) {
    r.sidecars = true;
    r.settings = settings_diff(va->sidecar, vb->sidecar);
    const std::vector<std::string> keys = incomparable_keys(r.settings);
    if (!keys.empty()) {
      std::string list;
      for (const auto& k : keys) list += (list.empty() ? "" : ", ") + k;
      r.verdict = Verdict::kNotComparable;
      r.reasons.push_back("another video: " + list + " differ(s)");
      return r;
    }
  }
  auto decode = [&](const RunVideo& v, bool& ok, const char* side) {
    try {
      return io::read_video_levels(v.path);
    } catch (const std::exception& e) {
      ok = false;
      r.reasons.push_back(str_cat(side, " does not decode: ", e.what()));
      return io::VideoLevels{};
    }
  };
  const io::VideoLevels da = decode(*va, r.a_decodes, "A"), db = decode(*vb, r.b_decodes, "B");
  if (!r.a_decodes || !r.b_decodes) {
    r.verdict = Verdict::kFailed;
    return r;
  }
  r.a_frames = da.frames.size(0), r.a_height = da.frames.size(1), r.a_width = da.frames.size(2);
  r.b_frames = db.frames.size(0), r.b_height = db.frames.size(1), r.b_width = db.frames.size(2);
  if (r.a_width != r.b_width || r.a_height != r.b_height) {
    r.verdict = Verdict::kFailed;
    r.reasons.push_back(
        str_cat("frame size differs: A ", r.a_width, "x", r.a_height, ", B ", r.b_width, "x", r.b_height));
    return r;
  }
  if (r.a_frames != r.b_frames) {
    r.verdict = Verdict::kFailed;
    r.reasons.push_back(str_cat("frame count differs: A ", r.a_frames, ", B ", r.b_frames, " (the first ",
                                std::min(r.a_frames, r.b_frames), " measured)"));
  }
  const int64_t n = std::min(r.a_frames, r.b_frames);
  std::vector<double> psnr, ssims, mad, lp;
  double max_abs = 0;
  for (int64_t f = 0; f < n; ++f) {
    FrameMetrics m;
    const at::Tensor d = (da.frames[f].to(at::kShort) - db.frames[f].to(at::kShort)).abs().to(at::kDouble);
    m.mad = d.mean().item<double>();
    m.max_abs = d.max().item<double>();
    const double mse = d.pow(2).mean().item<double>();
    m.psnr = mse == 0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(255.0 * 255.0 / mse);
    m.ssim = ssim(da.frames[f], db.frames[f], 255.0);
    r.frames.push_back(m);
    psnr.push_back(m.psnr), ssims.push_back(m.ssim), mad.push_back(m.mad);
    max_abs = std::max(max_abs, m.max_abs);
  }
  if (o.lpips && n > 0) {
    const std::vector<double> d = o.lpips->distances(da.frames.narrow(0, 0, n).to(at::kFloat) / 255.0,
                                                     db.frames.narrow(0, 0, n).to(at::kFloat) / 255.0);
    for (int64_t f = 0; f < n; ++f) r.frames[static_cast<size_t>(f)].lpips = d[static_cast<size_t>(f)];
    lp = d;
  }
  if (n > 0) {
    const auto worst = std::min_element(psnr.begin(), psnr.end());
    r.worst_frame = static_cast<int>(worst - psnr.begin());
    r.min_psnr = *worst;
    // The mean PSNR of a video with equal frames stays +inf (the mean of the finite ones would hide them).
    r.mean_psnr = std::isinf(r.min_psnr) ? r.min_psnr : mean_of(psnr);
    r.min_ssim = std::isnan(ssims[0]) ? NAN : *std::min_element(ssims.begin(), ssims.end());
    r.mean_ssim = mean_of(ssims);
    r.max_mad = *std::max_element(mad.begin(), mad.end());
    r.mean_mad = mean_of(mad);
    r.max_abs = max_abs;
    if (!lp.empty()) r.max_lpips = *std::max_element(lp.begin(), lp.end()), r.mean_lpips = mean_of(lp);
  }
  std::vector<std::string> notes;
  compare_latents(*va, *vb, r, notes);
  for (auto& note : notes) r.reasons.push_back(note);  // listed with the pair; they do not fail it
  if (n > 0) judge(o.thresholds, o.lpips != nullptr, r);
  if (!o.sheet_dir.empty() && n > 0) {
    std::set<int64_t> rows{0, n / 2, n - 1, r.worst_frame};
    r.sheet = str_cat("pair-", index, ".png");
    write_contact_sheet(join_path(o.sheet_dir, r.sheet), da.frames.narrow(0, 0, n), db.frames.narrow(0, 0, n),
                        std::vector<int64_t>(rows.begin(), rows.end()), 320, kHeatLevels);
  }
  return r;
}

void write_contact_sheet(const std::string& path, const at::Tensor& a, const at::Tensor& b,
                         const std::vector<int64_t>& rows, int max_width, double heat_levels) {
  const int64_t h = a.size(1), w = a.size(2);
  const int64_t factor = std::max<int64_t>(1, (w + max_width - 1) / max_width);
  auto shrink = [&](const at::Tensor& img) {  // [H, W, C] float -> [H / factor, W / factor, C], box filter
    if (factor == 1) return img;
    at::Tensor x = img.permute({2, 0, 1}).unsqueeze(0);  // [1, C, H, W]
    return at::avg_pool2d(x, {factor, factor}).squeeze(0).permute({1, 2, 0});
  };
  const int64_t sh = h / factor, sw = w / factor, gap = 4;
  at::Tensor sheet =
      at::full({static_cast<int64_t>(rows.size()) * (sh + gap) - gap, 3 * sw + 2 * gap, 3}, 255.0, at::kFloat);
  for (size_t i = 0; i < rows.size(); ++i) {
    const at::Tensor fa = a[rows[i]].to(at::kFloat), fb = b[rows[i]].to(at::kFloat);  // [H, W, 3] levels
    // Heat map of the largest channel difference: black (equal), red, yellow, white (heat_levels or more).
    const at::Tensor t = ((fa - fb).abs().amax(2, true) / heat_levels).clamp(0, 1);  // [H, W, 1]
    const at::Tensor heat = at::cat({(t * 3).clamp(0, 1), (t * 3 - 1).clamp(0, 1), (t * 3 - 2).clamp(0, 1)}, 2) * 255;
    const int64_t y = static_cast<int64_t>(i) * (sh + gap);
    const at::Tensor row = sheet.narrow(0, y, sh);
    row.narrow(1, 0, sw).copy_(shrink(fa));
    row.narrow(1, sw + gap, sw).copy_(shrink(fb));
    row.narrow(1, 2 * (sw + gap), sw).copy_(shrink(heat));
  }
  const at::Tensor bytes = sheet.round().clamp(0, 255).to(at::kByte).contiguous();
  const std::string tmp = temp_sibling(path, "partial");
  TempFile guard(tmp);
  OMNI_CHECK(stbi_write_png(tmp.c_str(), static_cast<int>(bytes.size(1)), static_cast<int>(bytes.size(0)), 3,
                            bytes.data_ptr<uint8_t>(), static_cast<int>(bytes.size(1) * 3)) != 0,
             path, ": cannot write the PNG");
  commit_file(tmp, path, /*overwrite=*/true);
  guard.committed();
}

}  // namespace omni::compare
