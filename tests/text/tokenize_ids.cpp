// Prints the ids omni-generate's tokenizer gives each line of standard input (no cleaning, eos appended, no
// padding), one JSON list per line: tokenizer_configs.sh compares them with transformers' tokenizer.
//   tokenize_ids TOKENIZER_DIR < texts
#include <iostream>
#include <string>

#include "core/error.h"
#include "text/umt5_tokenizer.h"

namespace {
int run(int argc, char** argv) {
  OMNI_CHECK_USAGE(argc == 2, "usage: tokenize_ids TOKENIZER_DIR < texts");
  const auto tok = omni::text::Umt5Tokenizer::from_dir(argv[1]);
  std::cout << "pad " << tok.pad_id() << "\n";
  std::string line;
  while (std::getline(std::cin, line)) {
    const auto ids = tok.encode_with_eos(line, 1 << 20);
    std::string out = "[";
    for (size_t i = 0; i < ids.size(); ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
    std::cout << out << "]\n";
  }
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("tokenize_ids", run, argc, argv);
}
