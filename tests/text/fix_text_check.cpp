// Driver for tests/text/fix_text_check.py: reads one JSON string per line on stdin and writes, per line, one
// JSON string (or boolean) with the result of the function the first argument names:
//   fix_text (default)  omni::text::fix_text            ftfy.fix_text
//   is_bad              ftfy::is_bad              ftfy.badness.is_bad
//   fix_encoding        ftfy::fix_encoding        ftfy.fix_encoding
//   unescape_html       ftfy_detail::unescape_html ftfy.fixes.unescape_html
//   html_unescape       omni::text::html_unescape       html.unescape
//   bench N             times N calls of fix_text on each input and prints the mean per call
// Standalone (no CMake target): see the build line in fix_text_check.py.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "text/fix_encoding.h"
#include "text/fix_text.h"
#include "text/html_unescape.h"
#include "text/utf8.h"

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "fix_text";
  const int reps = argc > 2 ? std::stoi(argv[2]) : 1;
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const std::string text = nlohmann::json::parse(line).get<std::string>();
    const std::u32string t32 = omni::text::utf8_decode(text);
    nlohmann::json result;
    if (mode == "fix_text") {
      result = omni::text::fix_text(text);
    } else if (mode == "is_bad") {
      result = omni::text::ftfy::is_bad(t32);
    } else if (mode == "fix_encoding") {
      result = omni::text::utf8_encode(omni::text::ftfy::fix_encoding(t32));
    } else if (mode == "unescape_html") {
      result = omni::text::utf8_encode(omni::text::ftfy_detail::unescape_html(t32));
    } else if (mode == "html_unescape") {
      result = omni::text::html_unescape(text);
    } else if (mode == "bench") {
      std::string out = omni::text::fix_text(text);  // warm the tables
      const auto t0 = std::chrono::steady_clock::now();
      for (int r = 0; r < reps; ++r) out = omni::text::fix_text(text);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps;
      std::printf("%zu code points: %.1f us per fix_text\n", t32.size(), us);
      continue;
    } else {
      std::cerr << "unknown mode " << mode << "\n";
      return 2;
    }
    std::cout << result.dump(-1, ' ', /*ensure_ascii=*/true) << "\n";
  }
  return 0;
}
