// Standalone check driver for text/tokenizer_json.h: reads one JSON string per line from stdin, writes the
// ids of each (add_special_tokens=True unless --no-special) as one JSON list per line.
//   tokenizer_json_check [--loader tokenizers|t5|pretrained] [--extra-ids N] [--no-special] [--time] TOKENIZER_JSON <
//   texts
// tests/text/tokenizer_json_check.py compares its output with transformers.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "text/tokenizer_json.h"

namespace {

int run(int argc, char** argv) {
  using omni::text::TokenizerJson;
  TokenizerJson::Loader loader = TokenizerJson::Loader::kT5TokenizerFile;
  bool special = true, timing = false;
  int extra_ids = 100;
  std::string path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--loader" && i + 1 < argc) {
      const std::string l = argv[++i];
      if (l == "tokenizers")
        loader = TokenizerJson::Loader::kTokenizers;
      else if (l == "t5")
        loader = TokenizerJson::Loader::kT5TokenizerFile;
      else if (l == "pretrained")
        loader = TokenizerJson::Loader::kT5FromPretrained;
      else
        OMNI_FAIL_USAGE("--loader must be tokenizers, t5 or pretrained, got ", l);
    } else if (a == "--extra-ids" && i + 1 < argc) {
      extra_ids = std::stoi(argv[++i]);
    } else if (a == "--no-special") {
      special = false;
    } else if (a == "--time") {
      timing = true;
    } else {
      OMNI_CHECK_USAGE(path.empty(),
                       "usage: tokenizer_json_check [--loader tokenizers|t5|pretrained] [--extra-ids N] [--no-special] "
                       "[--time] TOKENIZER_JSON < texts");
      path = a;
    }
  }
  OMNI_CHECK_USAGE(!path.empty(),
                   "usage: tokenizer_json_check [--loader tokenizers|t5|pretrained] [--extra-ids N] [--no-special] "
                   "[--time] TOKENIZER_JSON < texts");
  const auto t0 = std::chrono::steady_clock::now();
  const TokenizerJson tok(path, loader, extra_ids);
  const auto t1 = std::chrono::steady_clock::now();
  double encode_s = 0.0, worst_s = 0.0;
  size_t worst_len = 0, lines = 0;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    std::string text;
    try {
      text = nlohmann::json::parse(line).get<std::string>();
    } catch (const nlohmann::json::exception& e) {
      OMNI_FAIL_USAGE("stdin line ", lines + 1, " is not a JSON string: ", e.what());
    }
    const auto a = std::chrono::steady_clock::now();
    const std::vector<int64_t> ids = tok.encode(text, special);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
    encode_s += s;
    if (s > worst_s) {
      worst_s = s;
      worst_len = ids.size();
    }
    std::cout << nlohmann::json(ids).dump() << '\n';
    ++lines;
  }
  if (timing)
    std::fprintf(stderr, "load %.3f s; %zu texts encoded in %.3f s; slowest %.3f ms (%zu ids)\n",
                 std::chrono::duration<double>(t1 - t0).count(), lines, encode_s, worst_s * 1e3, worst_len);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("tokenizer_json_check", run, argc, argv);
}
