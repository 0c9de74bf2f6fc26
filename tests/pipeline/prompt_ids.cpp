// diffusers' text path for text_corpus.sh: each JSON line {"text": ...} of standard input cleaned as the Wan
// pipelines clean a prompt (pipeline::clean_prompt) and tokenized as _get_t5_prompt_embeds tokenizes it (padded
// and truncated to MAX_LEN); one line {"cleaned", "input_ids", "attention_mask"} per input line.
//   prompt_ids TOKENIZER_DIR MAX_LEN < corpus.jsonl
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "pipeline/prompt_encoding.h"
#include "text/umt5_tokenizer.h"

namespace {
int run(int argc, char** argv) {
  OMNI_CHECK_USAGE(argc == 3, "usage: prompt_ids TOKENIZER_DIR MAX_LEN < corpus.jsonl");
  const auto tok = omni::text::Umt5Tokenizer::from_dir(argv[1]);
  const int64_t max_len = std::stoll(argv[2]);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const std::string cleaned = omni::pipeline::clean_prompt(nlohmann::json::parse(line).at("text").get<std::string>());
    const auto batch = tok({cleaned}, max_len);
    const auto ids = batch.input_ids[0], mask = batch.attention_mask[0];  // [max_len]
    nlohmann::json out;
    out["cleaned"] = cleaned;
    out["input_ids"] = std::vector<int64_t>(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + max_len);
    out["attention_mask"] = std::vector<int64_t>(mask.data_ptr<int64_t>(), mask.data_ptr<int64_t>() + max_len);
    std::cout << out.dump(-1, ' ', /*ensure_ascii=*/true) << "\n";
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("prompt_ids", run, argc, argv);
}
