// precompiled_check CHARSMAP: normalizes texts with models::PrecompiledCharsmap, for precompiled_check.py to
// compare with tokenizers' Precompiled normalizer.
//   CHARSMAP   the raw charsmap bytes, or (a name ending in ".json") a tokenizer.json whose normalizer holds a
//              {"type": "Precompiled"} entry, at the top or inside a Sequence; its base64 is decoded by
//              PrecompiledCharsmap::base64_decode.
//   stdin      one JSON string per line; stdout: the normalized text of each, one JSON string per line.
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "text/precompiled_charsmap.h"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_INPUT(in.good(), path, ": cannot open");
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The base64 charsmap of the first Precompiled normalizer found in `node` (itself or a Sequence's member).
const nlohmann::json* find_precompiled(const nlohmann::json& node) {
  if (!node.is_object()) return nullptr;
  if (node.value("type", "") == "Precompiled") return &node;
  if (node.contains("normalizers") && node["normalizers"].is_array()) {
    for (const auto& child : node["normalizers"]) {
      if (const auto* found = find_precompiled(child)) return found;
    }
  }
  return nullptr;
}

std::string load_charsmap(const std::string& path) {
  if (!ends_with(path, ".json")) return read_file(path);
  const auto doc = nlohmann::json::parse(read_file(path), nullptr, /*allow_exceptions=*/false);
  OMNI_CHECK_INPUT(!doc.is_discarded(), path, ": not valid JSON");
  const nlohmann::json* entry = doc.contains("normalizer") ? find_precompiled(doc["normalizer"]) : nullptr;
  OMNI_CHECK_INPUT(entry != nullptr, path, ": no Precompiled normalizer");
  OMNI_CHECK_INPUT(entry->contains("precompiled_charsmap") && (*entry)["precompiled_charsmap"].is_string(), path,
                   ": Precompiled normalizer without a precompiled_charsmap string");
  return omni::text::PrecompiledCharsmap::base64_decode((*entry)["precompiled_charsmap"].get<std::string>(),
                                                        path + " (normalizer precompiled_charsmap)");
}

int run(int argc, char** argv) {
  OMNI_CHECK_USAGE(argc == 2, "usage: precompiled_check CHARSMAP_BLOB_OR_TOKENIZER_JSON < texts.jsonl");
  const std::string path = argv[1];
  const omni::text::PrecompiledCharsmap charsmap(load_charsmap(path), path);
  std::string line;
  size_t line_no = 0;
  while (std::getline(std::cin, line)) {
    ++line_no;
    const auto value = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    OMNI_CHECK_INPUT(!value.is_discarded() && value.is_string(), "stdin line ", line_no, ": not a JSON string");
    std::cout << nlohmann::json(charsmap.normalize(value.get<std::string>())).dump() << '\n';
  }
  std::cout.flush();
  OMNI_CHECK(std::cout.good(), "writing stdout failed");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return omni::run_tool("precompiled_check", run, argc, argv);
}
