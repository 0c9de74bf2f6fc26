// What a comparison of two runs gives people and CI systems (docs/comparisons.md): the console table, the
// JSON for scripts (--json), JUnit XML with one test case per pair (--junit), and an HTML report folder
// (--report: index.html, one file with no script library and nothing fetched, plus the pairs' contact sheets).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_compare.h"

namespace omni::compare {

struct Comparison {
  std::string a_source, b_source;  // the runs as given (A under test, B the reference)
  std::string profile;
  Thresholds thresholds;
  bool lpips = false;  // LPIPS measured
  bool allow_missing = false;
  std::vector<PairResult> pairs;   // worst first (sort_worst_first)
  std::vector<std::string> notes;  // said once for the whole comparison (no LPIPS weights, sidecars missing)
};

// Failed, regressions, missing, not comparable, new, passes; within each the lowest PSNR first.
void sort_worst_first(Comparison& c);
// 0 when no pair fails (verdict_fails), else 1.
int comparison_exit_code(const Comparison& c);
// How many pairs have each verdict, by verdict_name.
nlohmann::json verdict_counts(const Comparison& c);

// The console's table and summary line.
std::string console_text(const Comparison& c);
// Everything measured: the runs, thresholds, counts, and per pair its verdict, reasons, metrics (summary and
// per frame), latents and settings diff. Non-finite numbers: "inf" / "-inf" as strings, null when not measured.
nlohmann::json comparison_json(const Comparison& c);
// JUnit XML: a test suite of one test case per pair (regression and missing: failure; failed: error;
// not comparable and new: skipped).
std::string junit_xml(const Comparison& c);
// DIR/index.html: the summary table (worst first) and a section per pair: verdict and reasons, both videos
// playable (paths relative to DIR), the contact sheet, per-frame curves (inline SVG), the settings that differ.
// The contact sheets are already in DIR (CompareOptions::sheet_dir).
void write_html_report(const Comparison& c, const std::string& dir, bool overwrite);

// A metric as the table, the HTML and the tests print it: "inf", "n/a" or the value to `precision` digits.
std::string metric_text(double v, int precision);

}  // namespace omni::compare
