// The prompt's way to the text encoder, timed: pipeline::clean_prompt (ftfy, HTML entities, whitespace) and the
// tokenizer of a checkpoint folder on long prompts (512 tokens or more), per prompt. Target: well under 10 ms
// (issue 20), so that a prompt list of thousands costs nothing next to one denoising step.
//   text_bench TOKENIZER_DIR [ITERATIONS]
// With tools/reference/umt5_vocab.sh's folder (DEST/umt5) it is the real umt5-xxl tokenizer.json.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/error.h"
#include "pipeline/prompt_encoding.h"
#include "text/umt5_tokenizer.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

int run(int argc, char** argv) {
  OMNI_CHECK_USAGE(argc == 2 || argc == 3, "usage: text_bench TOKENIZER_DIR [ITERATIONS]");
  const int iterations = argc == 3 ? std::stoi(argv[2]) : 200;
  auto t0 = std::chrono::steady_clock::now();
  const auto tok = omni::text::Umt5Tokenizer::from_dir(argv[1]);
  std::printf("text_bench: load %s: %.1f ms\n", tok.path().c_str(), ms_since(t0));

  // Prompt-extension style English (curly quotes, em dashes, ellipses), Chinese, and a mix with emoji and
  // entities: each repeated past 512 tokens.
  const std::vector<std::pair<const char*, std::string>> bases = {
      {"english",
       "A lone lighthouse keeper\u2019s daughter walks along the wet basalt cliffs at dusk \u2014 her \u201cfavorite"
       "\u201d yellow raincoat snapping in the wind\u2026 The camera tracks her slowly from the left, waves "
       "crashing below in slow motion, cinematic lighting, 35mm film grain. "},
      {"chinese",
       "\u4e00\u4f4d\u5e74\u8f7b\u5973\u5b50\u5728\u96e8\u4e2d\u7684\u4e1c\u4eac\u8857\u5934\u6f2b\u6b65\uff0c"
       "\u9713\u8679\u706f\u5012\u6620\u5728\u6e7f\u6f09\u7684\u8def\u9762\u4e0a\uff0c\u201c\u6162\u52a8\u4f5c"
       "\u201d\u955c\u5934\uff0c\u7535\u5f71\u611f\u5149\u5f71\u3002"},
      {"mixed",
       "caf&eacute; scene \xf0\x9f\x8c\xa7\xef\xb8\x8f\xf0\x9f\x91\xa9\xe2\x80\x8d\xf0\x9f\x8e\xa8 \uff21\uff22 "
       "&amp; caf\xc3\x83\xc2\xa9 \u2014 "}};
  for (const auto& [name, base] : bases) {
    std::string prompt;
    while (static_cast<int64_t>(tok.encode(omni::pipeline::clean_prompt(prompt)).size()) < 512) prompt += base;
    std::vector<double> ms;
    int64_t tokens = 0;
    for (int i = 0; i < iterations; ++i) {
      t0 = std::chrono::steady_clock::now();
      const std::string cleaned = omni::pipeline::clean_prompt(prompt);
      tokens = static_cast<int64_t>(tok.encode_with_eos(cleaned, 1 << 20).size());
      ms.push_back(ms_since(t0));
    }
    std::sort(ms.begin(), ms.end());
    std::printf("text_bench: %-8s %zu bytes, %ld tokens: clean + tokenize median %.3f ms, p90 %.3f ms, max %.3f ms\n",
                name, prompt.size(), static_cast<long>(tokens), ms[ms.size() / 2], ms[ms.size() * 9 / 10], ms.back());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("text_bench", run, argc, argv);
}
