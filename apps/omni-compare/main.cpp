// omni-compare: regression comparison of two outputs, or of two whole runs.
//
//   omni-compare RUN_A RUN_B [--profile P] [--report DIR] [--json F] [--junit F]   two output folders (or JSON
//       Lines manifests): videos paired by name (then by prompt and seed), each pair measured and judged, the
//       sidecars' settings compared (run_compare.h, report.h; docs/comparisons.md)
//   omni-compare A.mp4 B.mp4 [--psnr-min DB] [--ssim-min S] [--tolerance X]   two videos, decoded, frame by frame
//   omni-compare A.safetensors B.safetensors [--tolerance X]       every tensor (--keys to pick some)
//   omni-compare A.mp4 B.safetensors [--frames-key frames]         a video against saved frames [1,] F, H, W, 3
//
// B is the reference. Exit codes: 0 within tolerance, 1 not (or a mismatch in frames, sizes, keys, shapes),
// 2 bad usage, 3 a missing or unreadable file. With no --tolerance, --psnr-min or --ssim-min two files must be
// equal; two runs are judged by --profile (default kernel) and the metric flags. Frames get per-frame PSNR and
// SSIM (ssim.h: scikit-image's Gaussian-window SSIM, data range 1) and the worst of each; SSIM also its mean over
// frames, the video's SSIM.
#include <ATen/Parallel.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/files.h"
#include "core/progress.h"
#include "io/audio_reader.h"
#include "io/safetensors.h"
#include "io/video_reader.h"
#include "io/video_writer.h"
#include "lpips.h"
#include "report.h"
#include "run_compare.h"
#include "ssim.h"

namespace {

using namespace omni;

struct Settings {
  std::string a, b;
  std::optional<double> tolerance;      // max abs
  std::optional<double> rel_tolerance;  // max abs / max |B|
  std::optional<double> psnr_min;       // videos and frames, values in [0, 1]
  std::optional<double> ssim_min;       // videos and frames: the smallest allowed per-frame SSIM
  std::vector<std::string> keys;
  bool allow_missing = false;
  std::string frames_key = "frames";
  // Compare BT.601 luma only: the codec's own error, without the colour loss of 4:2:0 subsampling (which on
  // pixel-noise content, such as random-weight models produce, bounds full-colour PSNR near 25-30 dB even
  // losslessly encoded).
  bool luma = false;
  // Videos: compare their sound tracks too (--audio; --audio-snr-min DB allows an SNR down to DB instead of
  // equal samples). Ignored otherwise: a speech-to-video MP4 carries the recording it was made from.
  bool audio = false;
  std::optional<double> audio_snr_min;
};

// [F, H, W, 3] RGB -> [F, H, W, 1] BT.601 luma (the matrix the writer encodes with).
at::Tensor to_luma(const at::Tensor& rgb) {
  at::Tensor x = rgb.to(at::kDouble);
  return (x.select(3, 0) * 0.299 + x.select(3, 1) * 0.587 + x.select(3, 2) * 0.114).unsqueeze(3);
}

bool is_tensor_file(const std::string& path) {
  const std::string ext = ".safetensors";
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

std::string fmt(double v, int precision = 4) {
  if (std::isinf(v)) return "inf";
  std::ostringstream os;
  os << std::setprecision(precision) << v;
  return os.str();
}

std::string shape_str(at::IntArrayRef s) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < s.size(); ++i) os << (i ? "," : "") << s[i];
  os << "]";
  return os.str();
}

// Whether (max_abs, min_psnr, min_ssim) pass the criteria that were given; equality when none was.
bool within(const Settings& s, double max_abs, double max_rel, double min_psnr, double min_ssim, std::string* why) {
  std::ostringstream os;
  bool ok = true;
  if (!s.tolerance && !s.rel_tolerance && !s.psnr_min && !s.ssim_min) {
    ok = max_abs == 0.0;
    os << "max abs " << fmt(max_abs) << (ok ? " == 0" : " != 0") << " (no tolerance given: exact)";
  }
  if (s.tolerance) {
    const bool pass = max_abs <= *s.tolerance;
    os << "max abs " << fmt(max_abs) << (pass ? " <= " : " > ") << "tolerance " << fmt(*s.tolerance) << "; ";
    ok = ok && pass;
  }
  if (s.rel_tolerance) {
    const bool pass = max_rel <= *s.rel_tolerance;
    os << "max rel " << fmt(max_rel) << (pass ? " <= " : " > ") << "rel tolerance " << fmt(*s.rel_tolerance) << "; ";
    ok = ok && pass;
  }
  if (s.psnr_min) {
    const bool pass = min_psnr >= *s.psnr_min;
    os << "min PSNR " << fmt(min_psnr) << (pass ? " >= " : " < ") << fmt(*s.psnr_min) << " dB; ";
    ok = ok && pass;
  }
  if (s.ssim_min) {
    const bool pass = min_ssim >= *s.ssim_min;  // false for NaN: frames too small for SSIM
    os << "min SSIM " << (std::isnan(min_ssim) ? "n/a" : fmt(min_ssim, 6)) << (pass ? " >= " : " < ")
       << fmt(*s.ssim_min, 6) << "; ";
    ok = ok && pass;
  }
  *why = os.str();
  return ok;
}

// Frames [F, H, W, 3] of either a video or a tensor file (`frames_key`, leading batch of 1 dropped).
at::Tensor load_frames(const std::string& path, const Settings& s, std::string* label) {
  if (!is_tensor_file(path)) {
    omni::io::Video v = omni::io::read_video(path);
    *label = omni::str_cat(path, " (", v.info.codec, " ", v.info.pixel_format, " ", v.info.width, "x", v.info.height,
                           ", ", v.info.frame_count, " frames, ", v.info.fps_num, "/", v.info.fps_den, " fps)");
    return v.frames;
  }
  omni::io::SafetensorsFile file(path);
  OMNI_CHECK_INPUT(file.contains(s.frames_key), path, ": no tensor '", s.frames_key,
                   "' to compare with a video (set --frames-key)");
  at::Tensor t = file.read(s.frames_key, at::kFloat);
  if (t.dim() == 5 && t.size(0) == 1) t = t[0];  // [1, F, H, W, 3] -> [F, H, W, 3]
  OMNI_CHECK_INPUT(t.dim() == 4 && t.size(3) == 3, path, ": tensor '", s.frames_key,
                   "' should be [F, H, W, 3] frames, got ", shape_str(t.sizes()));
  *label = omni::str_cat(path, " (tensor '", s.frames_key, "' ", shape_str(t.sizes()), ")");
  return t;
}

// The sound tracks of two videos (--audio): the same rate and channels, lengths within one video frame, and
// equal samples (or, with --audio-snr-min, an SNR of A against B of at least that). A missing track fails.
bool compare_audio(const Settings& s) {
  omni::io::AudioTrack a, b;
  for (auto [path, track] : {std::pair{&s.a, &a}, std::pair{&s.b, &b}}) {
    try {
      *track = omni::io::load_audio_track(*path);
    } catch (const omni::Error& e) {
      std::cout << "FAIL: audio: " << e.what() << "\n";
      return false;
    }
  }
  auto describe = [](const omni::io::AudioTrack& t) {
    return omni::str_cat(t.sample_rate, " Hz, ", t.channels, " ch, ", fmt(t.duration(), 4), " s");
  };
  std::cout << "audio: A " << describe(a) << "; B " << describe(b) << "\n";
  if (a.sample_rate != b.sample_rate || a.channels != b.channels) {
    std::cout << "FAIL: audio: the sample rate or channel count differs\n";
    return false;
  }
  const double fps = omni::io::video_frame_rate(s.b);
  const int64_t slack = fps > 0 ? static_cast<int64_t>(b.sample_rate / fps) : 0;
  if (std::abs(a.frames() - b.frames()) > slack) {
    std::cout << "FAIL: audio: A has " << a.frames() << " samples per channel, B " << b.frames()
              << " (more than a video frame apart)\n";
    return false;
  }
  const int64_t n = std::min(a.frames(), b.frames()) * a.channels;
  double signal = 0, noise = 0, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(a.samples[i]) - b.samples[i];
    signal += static_cast<double>(b.samples[i]) * b.samples[i];
    noise += d * d;
    max_abs = std::max(max_abs, std::fabs(d));
  }
  const double snr = noise == 0 ? std::numeric_limits<double>::infinity() : 10 * std::log10(signal / noise);
  std::cout << "audio: SNR " << fmt(snr) << " dB, max abs " << fmt(max_abs) << " over " << n << " samples\n";
  const bool ok = s.audio_snr_min ? snr >= *s.audio_snr_min : noise == 0 && a.frames() == b.frames();
  std::cout << (ok ? "PASS: audio " : "FAIL: audio ")
            << (s.audio_snr_min ? omni::str_cat("SNR ", fmt(snr), " dB", ok ? " >= " : " < ", *s.audio_snr_min)
                                : std::string(ok ? "equal" : "not equal (no --audio-snr-min given: exact)"))
            << "\n";
  return ok;
}

int compare_frames(const Settings& s) {
  OMNI_CHECK_USAGE(s.keys.empty(), "--keys applies to two tensor files");
  std::string label_a, label_b;
  at::Tensor a = load_frames(s.a, s, &label_a);
  at::Tensor b = load_frames(s.b, s, &label_b);
  if (s.luma) {
    a = to_luma(a);
    b = to_luma(b);
  }
  std::cout << "A: " << label_a << "\nB: " << label_b << (s.luma ? "\n(luma only)" : "") << "\n";
  if (a.size(1) != b.size(1) || a.size(2) != b.size(2)) {
    std::cout << "FAIL: frame size differs: A " << a.size(2) << "x" << a.size(1) << ", B " << b.size(2) << "x"
              << b.size(1) << "\n";
    return 1;
  }
  const int64_t n = std::min(a.size(0), b.size(0));
  bool count_ok = a.size(0) == b.size(0);
  std::cout << std::left << std::setw(8) << "frame" << std::setw(12) << "PSNR(dB)" << std::setw(14) << "SSIM"
            << std::setw(12) << "max_abs"
            << "mean_abs\n";
  double max_abs = 0.0, sum_abs = 0.0, min_psnr = std::numeric_limits<double>::infinity(), max_ref = 0.0;
  // SSIM is NaN for frames under 11x11 (all frames have one size): its min stays NaN then, and fails --ssim-min.
  double min_ssim = n ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  double sum_ssim = 0.0;
  for (int64_t f = 0; f < n; ++f) {
    at::Tensor d = (a[f].to(at::kDouble) - b[f].to(at::kDouble)).abs();
    const double fmax = d.max().item<double>(), fmean = d.mean().item<double>();
    const double mse = d.pow(2).mean().item<double>();
    const double psnr = mse == 0.0 ? std::numeric_limits<double>::infinity() : 10.0 * std::log10(1.0 / mse);
    const double ssim = omni::compare::ssim(a[f], b[f], 1.0);
    std::cout << std::setw(8) << f << std::setw(12) << fmt(psnr) << std::setw(14) << fmt(ssim, 6) << std::setw(12)
              << fmt(fmax) << fmt(fmean) << "\n";
    max_abs = std::max(max_abs, fmax);
    sum_abs += fmean;
    min_psnr = std::min(min_psnr, psnr);
    min_ssim = std::isnan(ssim) ? ssim : std::min(min_ssim, ssim);  // std::min keeps a NaN min_ssim
    sum_ssim += ssim;
    max_ref = std::max(max_ref, b[f].abs().max().item<double>());
  }
  std::cout << std::setw(8) << "all" << std::setw(12) << ("min " + fmt(min_psnr)) << std::setw(14)
            << ("min " + fmt(min_ssim, 6)) << std::setw(12) << fmt(max_abs) << fmt(n ? sum_abs / n : 0.0) << "\n";
  if (n == 0)
    std::cout << "SSIM: n/a (no frames)\n";
  else if (std::isnan(min_ssim))
    std::cout << "SSIM: n/a (frames under " << omni::compare::kSsimWindow << "x" << omni::compare::kSsimWindow << ")\n";
  else
    std::cout << "SSIM: mean " << fmt(sum_ssim / n, 10) << ", min " << fmt(min_ssim, 10) << " over " << n
              << " frames\n";
  std::string why;
  const double max_rel = max_ref > 0 ? max_abs / max_ref : max_abs;
  bool ok = within(s, max_abs, max_rel, min_psnr, min_ssim, &why);
  if (!count_ok) {
    std::cout << "FAIL: frame count differs: A " << a.size(0) << ", B " << b.size(0) << " (compared the first " << n
              << ")\n";
    return 1;
  }
  std::cout << (ok ? "PASS: " : "FAIL: ") << why << "\n";
  if (s.audio) {
    OMNI_CHECK_USAGE(!is_tensor_file(s.a) && !is_tensor_file(s.b), "--audio compares the sound of two videos; ",
                     is_tensor_file(s.a) ? s.a : s.b, " is a tensor file");
    ok = compare_audio(s) && ok;
  }
  return ok ? 0 : 1;
}

int compare_tensors(const Settings& s) {
  OMNI_CHECK_USAGE(!s.psnr_min, "--psnr-min applies to videos (and frames against a video); use --tolerance");
  OMNI_CHECK_USAGE(!s.ssim_min, "--ssim-min applies to videos (and frames against a video); use --tolerance");
  omni::io::SafetensorsFile fa(s.a), fb(s.b);
  std::cout << "A: " << s.a << " (" << fa.names().size() << " tensors)\nB: " << s.b << " (" << fb.names().size()
            << " tensors)\n";
  std::vector<std::string> names;
  std::vector<std::string> missing_a, missing_b;
  if (!s.keys.empty()) {
    for (const auto& k : s.keys) {
      if (!fa.contains(k)) missing_a.push_back(k);
      if (!fb.contains(k)) missing_b.push_back(k);
      if (fa.contains(k) && fb.contains(k)) names.push_back(k);
    }
  } else {
    std::set<std::string> in_a(fa.names().begin(), fa.names().end()), in_b(fb.names().begin(), fb.names().end());
    for (const auto& k : in_a) (in_b.count(k) ? names : missing_b).push_back(k);
    for (const auto& k : in_b)
      if (!in_a.count(k)) missing_a.push_back(k);
  }
  size_t width = 8;
  for (const auto& k : names) width = std::max(width, k.size() + 2);
  std::cout << std::left << std::setw(static_cast<int>(width)) << "tensor" << std::setw(20) << "shape" << std::setw(10)
            << "dtype" << std::setw(12) << "max_abs" << std::setw(12) << "max_rel"
            << "status\n";
  bool all_ok = true;
  for (const auto& k : names) {
    const auto& ia = fa.info(k);
    const auto& ib = fb.info(k);
    std::string dtype = omni::io::dtype_name(ia.dtype);
    if (ia.dtype != ib.dtype) dtype += std::string("/") + omni::io::dtype_name(ib.dtype);
    std::cout << std::setw(static_cast<int>(width)) << k;
    if (ia.shape != ib.shape) {
      std::cout << std::setw(20) << (shape_str(ia.shape) + "/" + shape_str(ib.shape)) << std::setw(10) << dtype
                << std::setw(12) << "-" << std::setw(12) << "-"
                << "FAIL (shape)\n";
      all_ok = false;
      continue;
    }
    at::Tensor a = fa.read(k, at::kDouble), b = fb.read(k, at::kDouble);
    const double max_abs = a.numel() ? (a - b).abs().max().item<double>() : 0.0;
    const double ref = b.numel() ? b.abs().max().item<double>() : 0.0;
    const double max_rel = ref > 0 ? max_abs / ref : max_abs;
    const bool nan = a.numel() && (a.isnan().any().item<bool>() != b.isnan().any().item<bool>() || std::isnan(max_abs));
    std::string why;
    const bool ok = !nan && within(s, max_abs, max_rel, 0.0, 0.0, &why);
    all_ok = all_ok && ok;
    std::cout << std::setw(20) << shape_str(ia.shape) << std::setw(10) << dtype << std::setw(12) << fmt(max_abs)
              << std::setw(12) << fmt(max_rel) << (ok ? "ok" : (nan ? "FAIL (NaN)" : "FAIL")) << "\n";
  }
  auto list = [](const std::vector<std::string>& v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + v[i];
    return out;
  };
  if (!missing_a.empty()) std::cout << "missing in A: " << list(missing_a) << "\n";
  if (!missing_b.empty()) std::cout << "missing in B: " << list(missing_b) << "\n";
  const bool keys_ok = s.allow_missing || (missing_a.empty() && missing_b.empty());
  if (names.empty()) {
    std::cout << "FAIL: no tensor in common\n";
    return 1;
  }
  const bool ok = all_ok && keys_ok;
  std::cout << (ok ? "PASS" : "FAIL") << ": " << names.size() << " tensors compared"
            << (keys_ok ? "" : ", keys missing (--allow-missing to accept)")
            << (all_ok ? "" : ", some out of tolerance") << "\n";
  return ok ? 0 : 1;
}

// A folder, or a JSON Lines manifest: one of the two runs `omni-compare RUN_A RUN_B` compares.
bool is_run(const std::string& path) {
  return is_dir(path) || ends_with(path, ".jsonl");
}

struct RunSettings {
  std::string profile = "kernel";
  compare::Thresholds thresholds;  // the profile's, with the metric flags on top
  std::string lpips_weights, report, json, junit;
  int jobs = 0;  // 0: one per core
  bool allow_missing = false;
  bool overwrite = false;
};

int compare_runs(const Settings& s, const RunSettings& rs) {
  // Every output path checked before any video is decoded: a comparison of 200 pairs must not end by refusing
  // to write its report.
  if (!rs.json.empty()) io::check_output_writable(rs.json, rs.overwrite);
  if (!rs.junit.empty()) io::check_output_writable(rs.junit, rs.overwrite);
  if (!rs.report.empty()) {
    if (is_dir(rs.report)) {
      OMNI_CHECK_USAGE(rs.overwrite || std::filesystem::is_empty(rs.report), "--report ", rs.report,
                       ": the folder exists and is not empty; choose a new one, or give --overwrite to replace its "
                       "report");
    } else {
      std::error_code ec;
      std::filesystem::create_directory(rs.report, ec);
      OMNI_CHECK_USAGE(!ec, "--report ", rs.report, ": cannot create the folder: ", ec.message());
    }
  }
  std::unique_ptr<compare::Lpips> lpips;
  if (!rs.lpips_weights.empty()) lpips = std::make_unique<compare::Lpips>(rs.lpips_weights);

  const compare::Run a = compare::read_run(s.a), b = compare::read_run(s.b);
  const compare::Pairing pairing = compare::pair_runs(a, b);
  compare::Comparison c;
  c.a_source = s.a;
  c.b_source = s.b;
  c.profile = rs.profile;
  c.thresholds = rs.thresholds;
  c.lpips = lpips != nullptr;
  c.allow_missing = rs.allow_missing;
  if (!lpips)
    c.notes.push_back("LPIPS not measured: no --lpips-weights (tools/lpips/convert_weights.py writes the file)");
  for (const compare::Run* run : {&a, &b}) {
    int missing = 0;
    for (const auto& v : run->videos) {
      if (!v.sidecar_error.empty())
        c.notes.push_back(str_cat(v.sidecar_path, ": unreadable sidecar, settings not compared: ", v.sidecar_error));
      missing += v.sidecar_path.empty();
    }
    if (missing)
      c.notes.push_back(str_cat(missing, " of ", run->videos.size(), " videos of ", run->source,
                                " have no sidecar (<video>.json): their settings are not compared"));
  }

  compare::CompareOptions o;
  o.thresholds = rs.thresholds;
  o.lpips = lpips.get();
  o.sheet_dir = rs.report;
  const int n = static_cast<int>(pairing.pairs.size());
  c.pairs.resize(static_cast<size_t>(n));
  const int jobs =
      std::max(1, std::min(n, rs.jobs > 0 ? rs.jobs : static_cast<int>(std::thread::hardware_concurrency())));
  // Pairs in parallel, one intra-op thread each (several pairs use the cores better than one pair's small ops).
  std::mutex mutex;
  int next = 0, done = 0;
  Progress progress("omni-compare pairs", n, isatty(fileno(stderr)) != 0);
  auto worker = [&] {
    if (jobs > 1) at::set_num_threads(1);
    for (;;) {
      int i;
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (next >= n) return;
        i = next++;
      }
      const auto start = std::chrono::steady_clock::now();
      compare::PairResult r = compare::compare_pair(a, b, pairing.pairs[static_cast<size_t>(i)], i + 1, o);
      r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::lock_guard<std::mutex> lock(mutex);
      progress.update(++done, r.seconds, r.name);
      c.pairs[static_cast<size_t>(i)] = std::move(r);
    }
  };
  std::vector<std::thread> threads;
  std::exception_ptr failure;
  for (int t = 0; t < jobs; ++t)
    threads.emplace_back([&] {
      try {
        worker();
      } catch (...) {  // a bug or a write error, not a bad video (compare_pair keeps those): end the run
        std::lock_guard<std::mutex> lock(mutex);
        if (!failure) failure = std::current_exception();
        next = n;
      }
    });
  for (auto& t : threads) t.join();
  progress.finish();
  if (failure) std::rethrow_exception(failure);

  compare::sort_worst_first(c);
  std::cout << compare::console_text(c);
  if (!rs.json.empty()) write_file_atomically(rs.json, compare::comparison_json(c).dump(2) + "\n", rs.overwrite);
  if (!rs.junit.empty()) write_file_atomically(rs.junit, compare::junit_xml(c), rs.overwrite);
  if (!rs.report.empty()) {
    compare::write_html_report(c, rs.report, rs.overwrite);
    std::cout << "report: " << join_path(rs.report, "index.html") << "\n";
  }
  return compare::comparison_exit_code(c);
}

int run(int argc, char** argv) {
  Settings s;
  RunSettings rs;
  CLI::App app{
      "omni-compare: compare two outputs (videos, or safetensors tensor files), or two runs (output "
      "folders or JSON Lines manifests); B is the reference",
      "omni-compare"};
  app.set_help_flag("-h,--help", "print this help and exit");
  app.add_option("A", s.a,
                 "output to check: a video (any FFmpeg-readable file), a .safetensors file, or a run (an output "
                 "folder, or a .jsonl manifest)")
      ->required();
  app.add_option("B", s.b, "reference: a video, a .safetensors file, or a run")->required();
  double tol = 0, rel = 0, psnr = 0, ssim = 0, mad = 0, lp = 0, cosine = 0;
  std::string keys;
  auto* o_tol = app.add_option("--tolerance", tol, "largest allowed max abs difference");
  auto* o_rel = app.add_option("--rel-tolerance", rel, "largest allowed max abs difference / max |B| (tensors)");
  auto* o_psnr = app.add_option("--psnr-min", psnr, "smallest allowed per-frame PSNR in dB (values in [0, 1])");
  auto* o_ssim =
      app.add_option("--ssim-min", ssim,
                     "smallest allowed per-frame SSIM (Gaussian window sigma 1.5, per channel, data range 1; "
                     "in [-1, 1]; frames under 11x11 fail it)");
  app.add_option("--keys", keys, "comma-separated tensor names to compare (default: all)");
  app.add_flag("--luma", s.luma, "videos and frames: compare BT.601 luma only (no chroma subsampling loss)");
  app.add_flag("--audio", s.audio,
               "videos: compare their sound tracks too (speech to video), sample for sample; ignored otherwise");
  double audio_snr = 0;
  auto* o_audio_snr = app.add_option("--audio-snr-min", audio_snr,
                                     "videos: compare their sound tracks, allowing an SNR down to this many dB");
  app.add_flag("--allow-missing", s.allow_missing,
               "do not fail on tensors present in only one file, or on videos of the reference run that A lacks");
  app.add_option("--frames-key", s.frames_key, "tensor holding the frames when a video meets a tensor file")
      ->capture_default_str();
  // Two runs.
  auto* o_profile =
      app.add_option("--profile", rs.profile,
                     "runs: the thresholds for the usual comparison: exact (bit-equal), layout (another parallel "
                     "layout), kernel (other kernels, GPUs or dtypes), model (a new checkpoint or LoRA)")
          ->capture_default_str();
  auto* o_mad = app.add_option("--mad-max", mad, "runs: largest allowed per-frame mean abs difference, 8-bit levels");
  auto* o_lpips = app.add_option("--lpips-max", lp, "runs: largest allowed per-frame LPIPS (with --lpips-weights)");
  auto* o_cos = app.add_option("--latent-cosine-min", cosine,
                               "runs: smallest allowed cosine of the final latents (where both runs --save-tensors)");
  auto* o_lw = app.add_option("--lpips-weights", rs.lpips_weights,
                              "runs: LPIPS (AlexNet) weights, one safetensors file (tools/lpips/convert_weights.py); "
                              "without it LPIPS is not measured");
  auto* o_report = app.add_option("--report", rs.report, "runs: write an HTML report (index.html and PNGs) to DIR");
  auto* o_json = app.add_option("--json", rs.json, "runs: write every figure as JSON to FILE");
  auto* o_junit = app.add_option("--junit", rs.junit, "runs: write JUnit XML (one test case per video) to FILE");
  auto* o_jobs = app.add_option("--jobs", rs.jobs, "runs: pairs compared at once (default: one per core)");
  auto* o_over = app.add_flag("--overwrite", rs.overwrite, "runs: replace existing --json, --junit and --report files");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::cout << app.help();
    return 0;
  } catch (const CLI::ParseError& e) {
    OMNI_FAIL_USAGE(e.what(), " (run with --help for the options)");
  }
  if (o_tol->count()) {
    OMNI_CHECK_USAGE(tol >= 0 && std::isfinite(tol), "--tolerance must be a finite number >= 0, got ", tol);
    s.tolerance = tol;
  }
  if (o_rel->count()) {
    OMNI_CHECK_USAGE(rel >= 0 && std::isfinite(rel), "--rel-tolerance must be a finite number >= 0, got ", rel);
    s.rel_tolerance = rel;
  }
  if (o_psnr->count()) s.psnr_min = psnr;
  if (o_audio_snr->count()) {
    OMNI_CHECK_USAGE(!std::isnan(audio_snr), "--audio-snr-min must be a number of dB");
    s.audio_snr_min = audio_snr;
    s.audio = true;
  }
  if (o_ssim->count()) {
    OMNI_CHECK_USAGE(ssim >= -1 && ssim <= 1, "--ssim-min must be a number in [-1, 1], got ", ssim);
    s.ssim_min = ssim;
  }
  const bool runs_a = is_run(s.a), runs_b = is_run(s.b);
  if (runs_a || runs_b) {
    const std::string& other = runs_a ? s.b : s.a;
    OMNI_CHECK_INPUT(std::filesystem::exists(other), other,
                     ": no such folder (a run to compare is an output folder of omni-generate, or a .jsonl naming its "
                     "videos)");
    OMNI_CHECK_USAGE(runs_a && runs_b, "compare a run with a run: ", runs_a ? s.a : s.b,
                     " is a run (a folder or a .jsonl manifest) but ", runs_a ? s.b : s.a, " is a file");
    for (const CLI::Option* o : {o_tol, o_rel})
      OMNI_CHECK_USAGE(!o->count(), o->get_name(),
                       " applies to two files; two runs take --profile and the metric "
                       "thresholds (--psnr-min, --ssim-min, --mad-max, --lpips-max, --latent-cosine-min)");
    OMNI_CHECK_USAGE(keys.empty() && !s.luma, "--keys and --luma apply to two files, not to two runs");
    OMNI_CHECK_USAGE(!s.audio, "--audio and --audio-snr-min apply to two videos, not to two runs");
    rs.allow_missing = s.allow_missing;
    rs.thresholds = compare::find_profile(rs.profile).thresholds;
    if (s.psnr_min) rs.thresholds.psnr_min = s.psnr_min;
    if (s.ssim_min) rs.thresholds.ssim_min = s.ssim_min;
    if (o_mad->count()) {
      OMNI_CHECK_USAGE(mad >= 0 && std::isfinite(mad), "--mad-max must be a finite number >= 0, got ", mad);
      rs.thresholds.mad_max = mad;
    }
    if (o_lpips->count()) {
      OMNI_CHECK_USAGE(lp >= 0 && std::isfinite(lp), "--lpips-max must be a finite number >= 0, got ", lp);
      rs.thresholds.lpips_max = lp;
    }
    if (o_cos->count()) {
      OMNI_CHECK_USAGE(cosine >= -1 && cosine <= 1, "--latent-cosine-min must be in [-1, 1], got ", cosine);
      rs.thresholds.latent_cosine_min = cosine;
    }
    OMNI_CHECK_USAGE(rs.jobs >= 0, "--jobs must be >= 1 (0: one per core), got ", rs.jobs);
    return compare_runs(s, rs);
  }
  for (const CLI::Option* o : {o_profile, o_mad, o_lpips, o_cos, o_lw, o_report, o_json, o_junit, o_jobs, o_over})
    OMNI_CHECK_USAGE(!o->count(), o->get_name(),
                     " applies to two runs (output folders or .jsonl manifests), not to "
                     "two files");
  for (size_t start = 0; !keys.empty() && start <= keys.size();) {
    size_t comma = keys.find(',', start);
    if (comma == std::string::npos) comma = keys.size();
    if (comma > start) s.keys.push_back(keys.substr(start, comma - start));
    start = comma + 1;
  }
  if (is_tensor_file(s.a) && is_tensor_file(s.b)) return compare_tensors(s);
  return compare_frames(s);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const omni::Error& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "omni-compare: error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "omni-compare: error: %s\n", e.what());
    return 1;
  }
}
