#include "report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/error.h"
#include "core/files.h"

namespace omni::compare {
namespace {

namespace fs = std::filesystem;

int severity(Verdict v) {
  switch (v) {
    case Verdict::kFailed:
      return 0;
    case Verdict::kRegression:
      return 1;
    case Verdict::kMissing:
      return 2;
    case Verdict::kNotComparable:
      return 3;
    case Verdict::kNew:
      return 4;
    case Verdict::kPass:
      return 5;
  }
  return 6;
}

nlohmann::json num(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}
nlohmann::json num(const std::optional<double>& v) {
  return v ? num(*v) : nlohmann::json(nullptr);
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        // XML 1.0 has no place for the C0 controls but tab and newlines.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r')
          out += "?";
        else
          out += c;
    }
  }
  return out;
}

// A path for an HTML attribute: percent-encoded, so that names with spaces, '#' or '?' stay one file.
std::string url_path(const std::string& p) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : p) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

// The verdict as a CSS class name: "not comparable" -> "not-comparable".
std::string verdict_class(Verdict v) {
  std::string cls = verdict_name(v);
  std::replace(cls.begin(), cls.end(), ' ', '-');
  return cls;
}

std::string reasons_text(const PairResult& p) {
  std::string out;
  for (const auto& r : p.reasons) out += (out.empty() ? "" : "; ") + r;
  return out;
}

// One small line chart of a per-frame metric (inline SVG): the values, and the threshold dashed.
std::string svg_chart(const std::string& title, const std::vector<double>& values, std::optional<double> limit,
                      double cap) {
  const int width = 300, height = 150, left = 50, right = 8, top = 18, bottom = 24;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values)
    if (!std::isnan(v)) lo = std::min(lo, std::min(v, cap)), hi = std::max(hi, std::min(v, cap));
  if (limit) lo = std::min(lo, *limit), hi = std::max(hi, *limit);
  if (!(lo <= hi)) lo = 0, hi = 1;
  if (hi - lo < 1e-9) lo -= 0.5, hi += 0.5;
  const double n = std::max<double>(1, static_cast<double>(values.size()) - 1);
  auto x = [&](double i) { return left + (width - left - right) * i / n; };
  auto y = [&](double v) { return top + (height - top - bottom) * (hi - std::min(v, cap)) / (hi - lo); };
  std::ostringstream os;
  os << std::fixed << std::setprecision(1);
  os << "<svg class=\"chart\" width=\"" << width << "\" height=\"" << height << "\" viewBox=\"0 0 " << width << " "
     << height << "\" role=\"img\" aria-label=\"" << xml_escape(title) << "\">";
  os << "<text x=\"" << left << "\" y=\"12\">" << xml_escape(title) << "</text>";
  os << "<line x1=\"" << left << "\" y1=\"" << top << "\" x2=\"" << left << "\" y2=\"" << height - bottom
     << "\" class=\"axis\"/><line x1=\"" << left << "\" y1=\"" << height - bottom << "\" x2=\"" << width - right
     << "\" y2=\"" << height - bottom << "\" class=\"axis\"/>";
  os << "<text x=\"" << left - 4 << "\" y=\"" << top + 4 << "\" text-anchor=\"end\">" << metric_text(hi, 2)
     << "</text><text x=\"" << left - 4 << "\" y=\"" << height - bottom << "\" text-anchor=\"end\">"
     << metric_text(lo, 2) << "</text>";
  os << "<text x=\"" << width - right << "\" y=\"" << height - 6 << "\" text-anchor=\"end\">frame "
     << values.size() - (values.empty() ? 0 : 1) << "</text><text x=\"" << left << "\" y=\"" << height - 6
     << "\">0</text>";
  if (limit)
    os << "<line x1=\"" << left << "\" y1=\"" << y(*limit) << "\" x2=\"" << width - right << "\" y2=\"" << y(*limit)
       << "\" class=\"limit\"/>";
  os << "<polyline class=\"curve\" points=\"";
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isnan(values[i])) os << x(static_cast<double>(i)) << "," << y(values[i]) << " ";
  os << "\"/></svg>";
  return os.str();
}

std::string video_cell(const std::string& label, const std::string& path, bool decodes, const std::string& dir) {
  if (path.empty()) return "<figure><figcaption>" + label + ": none</figcaption></figure>";
  std::error_code ec;
  const std::string rel = fs::relative(fs::absolute(path), fs::absolute(dir), ec).generic_string();
  const std::string src = url_path(ec || rel.empty() ? fs::absolute(path).generic_string() : rel);
  std::ostringstream os;
  os << "<figure><figcaption>" << label << ": <a href=\"" << src << "\">" << xml_escape(path) << "</a></figcaption>";
  if (decodes)  // a video known not to decode gets no player (the page would only show a broken one)
    os << "<video controls muted loop preload=\"metadata\" src=\"" << src << "\"></video>";
  else
    os << "<p class=\"bad\">does not decode</p>";
  os << "</figure>";
  return os.str();
}

}  // namespace

std::string metric_text(double v, int precision) {
  if (std::isnan(v)) return "n/a";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  std::ostringstream os;
  os << std::fixed << std::setprecision(precision) << v;
  return os.str();
}

void sort_worst_first(Comparison& c) {
  auto psnr = [](const PairResult& p) { return std::isnan(p.min_psnr) ? 1e300 : p.min_psnr; };
  std::stable_sort(c.pairs.begin(), c.pairs.end(), [&](const PairResult& x, const PairResult& y) {
    const int sx = severity(x.verdict), sy = severity(y.verdict);
    return sx != sy ? sx < sy : psnr(x) < psnr(y);
  });
}

int comparison_exit_code(const Comparison& c) {
  for (const auto& p : c.pairs)
    if (verdict_fails(p.verdict, c.allow_missing)) return 1;
  return 0;
}

nlohmann::json verdict_counts(const Comparison& c) {
  nlohmann::json counts = nlohmann::json::object();
  for (Verdict v : {Verdict::kPass, Verdict::kRegression, Verdict::kFailed, Verdict::kNotComparable, Verdict::kMissing,
                    Verdict::kNew})
    counts[verdict_name(v)] = 0;
  for (const auto& p : c.pairs) counts[verdict_name(p.verdict)] = counts[verdict_name(p.verdict)].get<int>() + 1;
  return counts;
}

std::string console_text(const Comparison& c) {
  std::ostringstream os;
  os << "A: " << c.a_source << "\nB: " << c.b_source << " (reference)\nprofile " << c.profile << "\n";
  size_t width = 6;
  for (const auto& p : c.pairs) width = std::max(width, p.name.size() + 2);
  os << std::left << std::setw(16) << "verdict" << std::setw(static_cast<int>(width)) << "video" << std::setw(11)
     << "minPSNR" << std::setw(9) << "minSSIM" << std::setw(9) << "maxMAD" << std::setw(9) << "LPIPS" << std::setw(12)
     << "latent_cos"
     << "why\n";
  for (const auto& p : c.pairs) {
    os << std::setw(16) << verdict_name(p.verdict) << std::setw(static_cast<int>(width)) << p.name << std::setw(11)
       << metric_text(p.min_psnr, 2) << std::setw(9) << metric_text(p.min_ssim, 4) << std::setw(9)
       << metric_text(p.max_mad, 3) << std::setw(9) << metric_text(p.max_lpips, 4) << std::setw(12)
       << (p.latent_cosine ? metric_text(*p.latent_cosine, 6) : std::string("n/a")) << reasons_text(p) << "\n";
    if (!p.settings.empty()) {
      os << std::setw(16) << ""
         << "settings that differ:";
      for (const auto& d : p.settings) os << " " << d.key << " (" << d.a.dump() << " vs " << d.b.dump() << ")";
      os << "\n";
    }
  }
  for (const auto& n : c.notes) os << "note: " << n << "\n";
  const nlohmann::json counts = verdict_counts(c);
  os << (comparison_exit_code(c) ? "FAIL" : "PASS") << ": " << c.pairs.size()
     << (c.pairs.size() == 1 ? " video" : " videos");
  for (const auto& [k, v] : counts.items())
    if (v.get<int>() > 0) os << ", " << v.get<int>() << " " << k;
  os << "\n";
  return os.str();
}

nlohmann::json comparison_json(const Comparison& c) {
  nlohmann::json j;
  j["a"] = c.a_source;
  j["b"] = c.b_source;
  j["profile"] = c.profile;
  j["thresholds"] = c.thresholds.to_json();
  j["lpips"] = c.lpips;
  j["allow_missing"] = c.allow_missing;
  j["counts"] = verdict_counts(c);
  j["passed"] = comparison_exit_code(c) == 0;
  j["notes"] = c.notes;
  nlohmann::json pairs = nlohmann::json::array();
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const PairResult& p = c.pairs[i];
    nlohmann::json q;
    q["name"] = p.name;
    q["verdict"] = verdict_name(p.verdict);
    q["fails"] = verdict_fails(p.verdict, c.allow_missing);
    q["reasons"] = p.reasons;
    q["paired_by"] = p.paired_by.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.paired_by);
    q["a"] = {{"name", p.a_name},   {"path", p.a_path},     {"frames", p.a_frames},
              {"width", p.a_width}, {"height", p.a_height}, {"decodes", p.a_decodes}};
    q["b"] = {{"name", p.b_name},   {"path", p.b_path},     {"frames", p.b_frames},
              {"width", p.b_width}, {"height", p.b_height}, {"decodes", p.b_decodes}};
    q["metrics"] = {{"min_psnr", num(p.min_psnr)},   {"mean_psnr", num(p.mean_psnr)}, {"min_ssim", num(p.min_ssim)},
                    {"mean_ssim", num(p.mean_ssim)}, {"max_mad", num(p.max_mad)},     {"mean_mad", num(p.mean_mad)},
                    {"max_abs", num(p.max_abs)},     {"max_lpips", num(p.max_lpips)}, {"mean_lpips", num(p.mean_lpips)},
                    {"worst_frame", p.worst_frame}};
    q["latents"] = {{"cosine", num(p.latent_cosine)}, {"max_abs", num(p.latent_max_abs)}};
    nlohmann::json frames = nlohmann::json::array();
    for (const auto& f : p.frames)
      frames.push_back({{"psnr", num(f.psnr)},
                        {"ssim", num(f.ssim)},
                        {"mad", num(f.mad)},
                        {"max_abs", num(f.max_abs)},
                        {"lpips", num(f.lpips)}});
    q["frames"] = frames;
    q["sidecars"] = p.sidecars;
    nlohmann::json diff = nlohmann::json::array();
    for (const auto& d : p.settings) diff.push_back({{"key", d.key}, {"a", d.a}, {"b", d.b}});
    q["settings_diff"] = diff;
    q["seconds"] = p.seconds;
    pairs.push_back(q);
  }
  j["pairs"] = pairs;
  return j;
}

std::string junit_xml(const Comparison& c) {
  int failures = 0, errors = 0, skipped = 0;
  double total = 0;
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const Verdict v = c.pairs[i].verdict;
    if (v == Verdict::kFailed)
      ++errors;
    else if (verdict_fails(v, c.allow_missing))
      ++failures;
    else if (v != Verdict::kPass)
      ++skipped;
    total += c.pairs[i].seconds;
  }
  std::ostringstream os;
  os << std::fixed << std::setprecision(3);
  const std::string suite = xml_escape("omni-compare " + c.a_source + " vs " + c.b_source);
  os << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  os << "<testsuites name=\"omni-compare\" tests=\"" << c.pairs.size() << "\" failures=\"" << failures << "\" errors=\""
     << errors << "\" skipped=\"" << skipped << "\" time=\"" << total << "\">\n";
  os << "  <testsuite name=\"" << suite << "\" tests=\"" << c.pairs.size() << "\" failures=\"" << failures
     << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\"" << total << "\">\n";
  os << "    <properties><property name=\"profile\" value=\"" << xml_escape(c.profile) << "\"/></properties>\n";
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const PairResult& p = c.pairs[i];
    const std::string why = xml_escape(reasons_text(p));
    std::ostringstream metrics;
    metrics << "min PSNR " << metric_text(p.min_psnr, 2) << " dB, min SSIM " << metric_text(p.min_ssim, 4)
            << ", max MAD " << metric_text(p.max_mad, 3) << ", max LPIPS " << metric_text(p.max_lpips, 4)
            << ", latents' cosine " << (p.latent_cosine ? metric_text(*p.latent_cosine, 6) : "n/a");
    os << "    <testcase classname=\"omni-compare\" name=\"" << xml_escape(p.name) << "\" time=\"" << p.seconds
       << "\">\n";
    const Verdict v = p.verdict;
    if (v == Verdict::kFailed)
      os << "      <error type=\"failed\" message=\"" << why << "\">" << xml_escape(metrics.str()) << "</error>\n";
    else if (verdict_fails(v, c.allow_missing))
      os << "      <failure type=\"" << verdict_name(v) << "\" message=\"" << why << "\">" << xml_escape(metrics.str())
         << "</failure>\n";
    else if (v != Verdict::kPass)
      os << "      <skipped message=\"" << xml_escape(std::string(verdict_name(v)) + ": ") << why << "\"/>\n";
    os << "      <system-out>" << xml_escape(metrics.str()) << "</system-out>\n";
    os << "    </testcase>\n";
  }
  os << "  </testsuite>\n</testsuites>\n";
  return os.str();
}

void write_html_report(const Comparison& c, const std::string& dir, bool overwrite) {
  std::ostringstream h;
  const nlohmann::json counts = verdict_counts(c);
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>omni-compare: "
    << xml_escape(c.a_source) << " vs " << xml_escape(c.b_source) << "</title>\n<style>\n"
    << "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}"
       "td,th{border:1px solid #ccc;padding:3px 7px;text-align:left;font-size:14px}th{background:#f0f0f0}"
       "td.num{text-align:right;font-variant-numeric:tabular-nums}"
       ".v-pass{color:#17692b}.v-regression,.v-failed,.v-missing{color:#b00020;font-weight:bold}"
       ".v-not-comparable,.v-new{color:#8a6d00}.bad{color:#b00020}section{border-top:2px solid #ddd;margin-top:1.5em}"
       "figure{display:inline-block;margin:0 1em 0 0;vertical-align:top}video{max-width:420px;display:block}"
       "img.sheet{max-width:100%;image-rendering:pixelated}svg.chart{margin-right:1em}"
       "svg text{font-size:11px;fill:#444}.axis{stroke:#888}.limit{stroke:#b00020;stroke-dasharray:4 3}"
       ".curve{fill:none;stroke:#1f5fbf;stroke-width:1.5}\n</style></head>\n";
  h << "<body data-pairs=\"" << c.pairs.size() << "\">\n";
  h << "<h1>omni-compare: " << (comparison_exit_code(c) ? "<span class=\"bad\">FAIL</span>" : "PASS") << "</h1>\n";
  h << "<p>A (under test): <code>" << xml_escape(c.a_source) << "</code><br>B (reference): <code>"
    << xml_escape(c.b_source) << "</code><br>profile <b>" << xml_escape(c.profile) << "</b>; thresholds: <code>"
    << xml_escape(c.thresholds.to_json().dump()) << "</code></p>\n<p>";
  for (const auto& [k, v] : counts.items()) h << v.get<int>() << " " << xml_escape(k) << " &middot; ";
  h << c.pairs.size() << " videos</p>\n";
  for (const auto& n : c.notes) h << "<p class=\"note\">note: " << xml_escape(n) << "</p>\n";
  h << "<table id=\"summary\"><thead><tr><th>#</th><th>video</th><th>verdict</th><th>min PSNR (dB)</th>"
       "<th>min SSIM</th><th>max MAD</th><th>max LPIPS</th><th>latents' cosine</th><th>why</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const PairResult& p = c.pairs[i];
    const std::string cls = verdict_class(p.verdict);
    h << "<tr data-name=\"" << xml_escape(p.name) << "\"><td class=\"num\">" << i + 1 << "</td><td><a href=\"#pair-"
      << i + 1 << "\">" << xml_escape(p.name) << "</a></td><td class=\"verdict v-" << cls << "\">"
      << verdict_name(p.verdict) << "</td><td class=\"num\">" << metric_text(p.min_psnr, 2) << "</td><td class=\"num\">"
      << metric_text(p.min_ssim, 4) << "</td><td class=\"num\">" << metric_text(p.max_mad, 3)
      << "</td><td class=\"num\">" << metric_text(p.max_lpips, 4) << "</td><td class=\"num\">"
      << (p.latent_cosine ? metric_text(*p.latent_cosine, 6) : "n/a") << "</td><td>" << xml_escape(reasons_text(p))
      << "</td></tr>\n";
  }
  h << "</tbody></table>\n";
  for (size_t i = 0; i < c.pairs.size(); ++i) {
    const PairResult& p = c.pairs[i];
    const std::string cls = verdict_class(p.verdict);
    h << "<section id=\"pair-" << i + 1 << "\"><h2>" << i + 1 << ". " << xml_escape(p.name)
      << " &mdash; <span class=\"v-" << cls << "\">" << verdict_name(p.verdict) << "</span></h2>\n";
    if (!p.paired_by.empty()) h << "<p>paired by " << xml_escape(p.paired_by) << "</p>\n";
    if (!p.reasons.empty()) {
      h << "<ul>";
      for (const auto& r : p.reasons) h << "<li>" << xml_escape(r) << "</li>";
      h << "</ul>\n";
    }
    h << "<div>" << video_cell("A", p.a_path, p.a_decodes, dir) << video_cell("B", p.b_path, p.b_decodes, dir)
      << "</div>\n";
    if (!p.sheet.empty())
      h << "<p>Frames "
        << (p.worst_frame >= 0 ? "(the worst, frame " + std::to_string(p.worst_frame) + ", included)" : "")
        << ": A | B | |A &minus; B| (black: equal; white: " << kHeatLevels
        << " levels or more)</p><img class=\"sheet\" src=\"" << url_path(p.sheet) << "\" alt=\"contact sheet of "
        << xml_escape(p.name) << "\">\n";
    if (!p.frames.empty()) {
      std::vector<double> psnr, ssim, mad, lp;
      for (const auto& f : p.frames)
        psnr.push_back(f.psnr), ssim.push_back(f.ssim), mad.push_back(f.mad), lp.push_back(f.lpips);
      // Equal frames have an infinite PSNR: drawn at 100 dB.
      h << "<div>" << svg_chart("PSNR (dB) per frame", psnr, c.thresholds.psnr_min, 100.0)
        << svg_chart("SSIM per frame", ssim, c.thresholds.ssim_min, 1e300)
        << svg_chart("mean abs difference (levels) per frame", mad, c.thresholds.mad_max, 1e300);
      if (c.lpips) h << svg_chart("LPIPS per frame", lp, c.thresholds.lpips_max, 1e300);
      h << "</div>\n";
    }
    if (p.sidecars) {
      if (p.settings.empty()) {
        h << "<p>Settings: the sidecars agree.</p>\n";
      } else {
        h << "<table class=\"settings\"><thead><tr><th>setting</th><th>A</th><th>B</th></tr></thead><tbody>";
        for (const auto& d : p.settings)
          h << "<tr><td>" << xml_escape(d.key) << "</td><td><code>" << xml_escape(d.a.dump())
            << "</code></td><td><code>" << xml_escape(d.b.dump()) << "</code></td></tr>";
        h << "</tbody></table>\n";
      }
    } else if (!p.a_path.empty() && !p.b_path.empty()) {
      h << "<p>Settings: not compared (a sidecar is missing).</p>\n";
    }
    h << "</section>\n";
  }
  // The page's own check that every image and video it shows loaded: body[data-load-errors] (read by the
  // test in a headless browser, and shown to a person at the top when not 0).
  h << "<script>\n"
       "window.addEventListener('load', function () {\n"
       "  var media = Array.prototype.slice.call(document.querySelectorAll('img, video'));\n"
       "  var pending = media.length, errors = 0;\n"
       "  function done(bad) { if (bad) errors++; if (--pending === 0) finish(); }\n"
       "  function finish() {\n"
       "    document.body.setAttribute('data-load-errors', String(errors));\n"
       "    if (errors) { var p = document.createElement('p'); p.className = 'bad';\n"
       "      p.textContent = errors + ' image(s) or video(s) did not load'; document.body.prepend(p); }\n"
       "  }\n"
       "  if (!pending) { finish(); return; }\n"
       "  media.forEach(function (m) {\n"
       "    if (m.tagName === 'IMG') { done(!(m.complete && m.naturalWidth > 0)); return; }\n"
       "    if (m.readyState >= 1) { done(false); return; }\n"
       "    if (m.error) { done(true); return; }\n"
       "    m.addEventListener('loadedmetadata', function () { done(false); }, { once: true });\n"
       "    m.addEventListener('error', function () { done(true); }, { once: true });\n"
       "  });\n"
       "});\n"
       "</script>\n</body></html>\n";
  write_file_atomically(join_path(dir, "index.html"), h.str(), overwrite);
}

}  // namespace omni::compare
