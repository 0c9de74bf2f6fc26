#include "text/unigram_model.h"

#include <algorithm>
#include <iterator>

#include "core/error.h"
#include "text/utf8.h"

namespace omni::text {

void UnigramModel::Trie::build(const std::unordered_map<std::string_view, int64_t>& ids) {
  std::vector<std::string_view> keys;
  keys.reserve(ids.size());
  for (const auto& kv : ids)
    if (!kv.first.empty()) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());  // string_view compares bytes as unsigned char (char_traits<char>)
  nodes.clear();
  nodes.reserve(keys.size() * 4);
  std::fill(std::begin(root), std::end(root), -1);
  std::vector<int32_t> path;        // path[j]: the node of prev[0..j]
  std::vector<int32_t> last_child;  // per node: its last child so far
  std::string_view prev;
  for (const std::string_view k : keys) {
    size_t lcp = 0;
    while (lcp < k.size() && lcp < prev.size() && k[lcp] == prev[lcp]) ++lcp;
    path.resize(lcp);
    for (size_t j = lcp; j < k.size(); ++j) {
      const int32_t id = static_cast<int32_t>(nodes.size());
      Node n;
      n.byte = static_cast<unsigned char>(k[j]);
      nodes.push_back(n);
      last_child.push_back(-1);
      if (j == 0) {
        root[n.byte] = id;
      } else {
        const int32_t parent = path[j - 1];
        if (last_child[parent] < 0)
          nodes[parent].first_child = id;
        else
          nodes[last_child[parent]].next_sibling = id;
        last_child[parent] = id;
      }
      path.push_back(id);
    }
    nodes[path.back()].value = ids.at(k);
    prev = k;
  }
}

int32_t UnigramModel::Trie::child(int32_t node, unsigned char c) const {
  for (int32_t ch = nodes[node].first_child; ch >= 0; ch = nodes[ch].next_sibling) {
    if (nodes[ch].byte == c) return ch;
    if (nodes[ch].byte > c) return -1;
  }
  return -1;
}

void UnigramModel::build() {
  ids_.reserve(pieces.size() * 2);
  for (size_t i = 0; i < pieces.size(); ++i) {
    ids_[std::string_view(pieces[i])] = static_cast<int64_t>(i);
    min_score_ = std::min(min_score_, scores[i]);
  }
  trie_.build(ids_);
}

int64_t UnigramModel::lookup(std::string_view s) const {
  const auto it = ids_.find(s);
  return it == ids_.end() ? -1 : it->second;
}

void UnigramModel::encode(const std::string& s, std::vector<int64_t>& out) const {
  if (s.empty()) return;
  struct Node {
    int64_t id = 0;
    double score = 0.0;
    int64_t start = -1;
  };
  const size_t n = s.size();
  const double unk_score = min_score_ - 10.0;
  std::vector<Node> best(n + 1);
  const std::string_view sv(s);
  size_t pos = 0;
  while (pos < n) {
    const double base = best[pos].score;
    const size_t mblen = utf8_sequence_length(s, pos);
    bool has_single = false;
    int32_t node = trie_.root[static_cast<unsigned char>(s[pos])];
    for (size_t i = pos; node >= 0;) {
      const int64_t id = trie_.nodes[node].value;
      const size_t end = i + 1;
      if (id >= 0) {  // a piece is UTF-8, so it ends on a character boundary of s
        Node& t = best[end];
        const double cand = scores[static_cast<size_t>(id)] + base;
        if (t.start < 0 || cand > t.score) {
          t.score = cand;
          t.start = static_cast<int64_t>(pos);
          t.id = id;
        }
        if (end - pos == mblen) has_single = true;
      }
      if (++i >= n) break;
      node = trie_.child(node, static_cast<unsigned char>(s[i]));
    }
    if (!has_single) {
      OMNI_CHECK_INPUT(unk_id >= 0, source, ": the Unigram model has no unk_id and the text has a character ",
                       "outside its vocabulary (tokenizers: MissingUnkId)");
      Node& t = best[pos + mblen];
      const double cand = unk_score + base;
      if (t.start < 0 || cand > t.score) {
        t.score = cand;
        t.start = static_cast<int64_t>(pos);
        t.id = unk_id;
      }
    }
    pos += mblen;
  }
  // Backtrack, fusing consecutive unknown nodes (fuse_unk is always true in tokenizers' Unigram).
  std::vector<std::pair<size_t, size_t>> spans;  // reversed
  size_t end = n;
  size_t fused_end = std::string::npos, fused_begin = 0;
  while (end > 0) {
    const Node& node = best[end];
    const size_t start = static_cast<size_t>(node.start);
    if (node.id == unk_id) {
      if (fused_end == std::string::npos) fused_end = end;
      fused_begin = start;
    } else {
      if (fused_end != std::string::npos) {
        spans.emplace_back(fused_begin, fused_end);
        fused_end = std::string::npos;
      }
      spans.emplace_back(start, end);
    }
    end = start;
  }
  if (fused_end != std::string::npos) spans.emplace_back(fused_begin, fused_end);
  for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
    const std::string_view piece = sv.substr(it->first, it->second - it->first);
    const int64_t id = lookup(piece);
    if (id >= 0) {
      out.push_back(id);
      continue;
    }
    if (byte_fallback) {
      std::vector<int64_t> bytes;
      bool all = true;
      for (unsigned char c : piece) {
        static const char* hex = "0123456789ABCDEF";
        const std::string b = std::string("<0x") + hex[c >> 4] + hex[c & 15] + ">";
        const int64_t bid = lookup(b);
        if (bid < 0) {
          all = false;
          break;
        }
        bytes.push_back(bid);
      }
      if (all) {
        out.insert(out.end(), bytes.begin(), bytes.end());
        continue;
      }
    }
    OMNI_CHECK_INPUT(unk_id >= 0, source, ": the Unigram model has no unk_id and the text has a character ",
                     "outside its vocabulary (tokenizers: MissingUnkId)");
    out.push_back(unk_id);
  }
}

}  // namespace omni::text
