// The Unigram model of a HF tokenizers tokenizer.json (text/tokenizer_json.h), encoding one pre-tokenized piece
// as tokenizers' Unigram::encode_optimized does: a Viterbi pass over the byte trie of the vocabulary, best total
// score wins and, on a tie, the path reached first (the piece that starts earliest); a character without a
// single-character piece gets an <unk> node scored min_score - 10; consecutive <unk> nodes are fused into one
// string, which is looked up again, then with byte_fallback turned into <0xNN> pieces when all of them exist,
// else it is unk_id.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace omni::text {

class UnigramModel {
 public:
  // Filled by the loader, then build().
  std::vector<std::string> pieces;
  std::vector<double> scores;
  int64_t unk_id = -1;  // -1: none (an unknown character is then an input error naming `source`)
  bool byte_fallback = false;
  std::string source;  // the file, for errors

  // The id index and the trie, from `pieces` and `scores`.
  void build();
  // The id of a piece (a repeated piece: its last id, as tokenizers' token_to_ids keeps it), or -1.
  int64_t lookup(std::string_view piece) const;
  // Appends the ids of `s` (one pre-tokenized piece, UTF-8) to `out`.
  void encode(const std::string& s, std::vector<int64_t>& out) const;
  // Distinct pieces (the id index's size).
  size_t size() const { return ids_.size(); }

 private:
  // A byte trie over the vocabulary (children as sibling lists in byte order, the root's in a table) for the
  // common-prefix search of the Viterbi pass; a node's value is the piece's id.
  struct Trie {
    struct Node {
      int32_t first_child = -1, next_sibling = -1;
      int64_t value = -1;
      unsigned char byte = 0;
    };
    std::vector<Node> nodes;
    int32_t root[256];
    void build(const std::unordered_map<std::string_view, int64_t>& ids);
    int32_t child(int32_t node, unsigned char c) const;
  };

  std::unordered_map<std::string_view, int64_t> ids_;  // views into `pieces`
  double min_score_ = std::numeric_limits<double>::infinity();
  Trie trie_;
};

}  // namespace omni::text
