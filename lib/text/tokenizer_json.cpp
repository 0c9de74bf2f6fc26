#include "text/tokenizer_json.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "io/json_file.h"
#include "text/precompiled_charsmap.h"
#include "text/unigram_model.h"
#include "text/utf8.h"

namespace omni::text {

namespace {

using json = nlohmann::json;

// ---- UTF-8 -------------------------------------------------------------------------------------------------

// Rust's char::is_whitespace (Unicode White_Space), which is also the regex crate's \s.
bool is_ws(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// The regex crate's Unicode \w (used by single_word added tokens): Alphabetic, the marks (Mn, Mc, Me),
// decimal digits (Nd), connector punctuation (Pc) and Join_Control.
bool is_word(char32_t c) {
  const auto cp = static_cast<UChar32>(c);
  if (u_hasBinaryProperty(cp, UCHAR_ALPHABETIC) || u_hasBinaryProperty(cp, UCHAR_JOIN_CONTROL)) return true;
  const int8_t gc = u_charType(cp);
  return gc == U_NON_SPACING_MARK || gc == U_COMBINING_SPACING_MARK || gc == U_ENCLOSING_MARK ||
         gc == U_DECIMAL_DIGIT_NUMBER || gc == U_CONNECTOR_PUNCTUATION;
}

// ---- JSON access with errors naming the file and the key ---------------------------------------------------

struct Doc {
  std::string path;

  const json& get(const json& obj, const std::string& key, const std::string& where) const {
    OMNI_CHECK_INPUT(obj.is_object(), path, ": '", where, "' must be an object, found ", obj.type_name());
    const auto it = obj.find(key);
    OMNI_CHECK_INPUT(it != obj.end(), path, ": missing key '", join(where, key), "'");
    return *it;
  }
  const json* find(const json& obj, const std::string& key) const {
    if (!obj.is_object()) return nullptr;
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
  }
  std::string str(const json& obj, const std::string& key, const std::string& where) const {
    const json& v = get(obj, key, where);
    OMNI_CHECK_INPUT(v.is_string(), path, ": '", join(where, key), "' must be a string, found ", v.dump());
    return v.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& key, const std::string& where, bool fallback) const {
    const json* v = find(obj, key);
    if (v == nullptr || v->is_null()) return fallback;
    OMNI_CHECK_INPUT(v->is_boolean(), path, ": '", join(where, key), "' must be true or false, found ", v->dump());
    return v->get<bool>();
  }
  static std::string join(const std::string& where, const std::string& key) {
    return where.empty() ? key : where + "." + key;
  }
};

// ---- normalizers -------------------------------------------------------------------------------------------

struct NormStep {
  enum Kind { kReplaceString, kReplaceRun, kPrecompiled, kStrip, kPrepend } kind = kReplaceString;
  std::string pattern;  // kReplaceString: the literal; kReplaceRun: the repeated character
  size_t min_rep = 1, max_rep = std::numeric_limits<size_t>::max();
  std::string content;  // the replacement, or the prepended text
  std::shared_ptr<PrecompiledCharsmap> charsmap;
  bool left = false, right = false;

  // Applies the step; `*lead_moved` is set when the first character of the result is no longer aligned with the
  // first character of `s` in tokenizers' NormalizedString (its offsets_original then no longer start where `s`
  // starts, which Metaspace's prepend_scheme "first" looks at):
  //  - Replace: the replacement of a match is aligned with the match's LAST character, so a match at 0 that
  //    spans two or more characters moves the start, and so does deleting a match at 0 (empty content);
  //  - Strip: stripping leading whitespace moves it;
  //  - Precompiled: never (spm_precompiled's replace() drops a deletion at the very start without an initial
  //    offset, so the next character takes over the first character's alignment), nor Prepend.
  std::string apply(const std::string& s, bool* lead_moved) const {
    switch (kind) {
      case kReplaceString: {
        std::string out;
        size_t i = 0;
        while (true) {
          const size_t at = s.find(pattern, i);
          if (at == std::string::npos) break;
          if (at == 0 && (content.empty() || utf8_count(pattern) > 1)) *lead_moved = true;
          out.append(s, i, at - i);
          out += content;
          i = at + pattern.size();
        }
        out.append(s, i, std::string::npos);
        return out;
      }
      case kReplaceRun: {
        std::string out;
        size_t i = 0;
        const size_t pl = pattern.size();
        while (i < s.size()) {
          size_t run = 0;
          while (i + (run + 1) * pl <= s.size() && s.compare(i + run * pl, pl, pattern) == 0) ++run;
          if (run == 0) {
            size_t len = 0;
            utf8_decode_at(s, i, &len);
            out.append(s, i, len);
            i += len;
            continue;
          }
          // Leftmost-greedy matches of pattern{min,max} over a run of `run` repetitions.
          size_t left_in_run = run;
          while (left_in_run >= min_rep) {
            const size_t take = std::min(left_in_run, max_rep);
            if (i == 0 && (content.empty() || take * utf8_count(pattern) > 1)) *lead_moved = true;
            out += content;
            i += take * pl;
            left_in_run -= take;
          }
          out.append(s, i, left_in_run * pl);
          i += left_in_run * pl;
        }
        return out;
      }
      case kPrecompiled: {
        return charsmap->normalize(s);
      }
      case kStrip: {
        size_t b = 0, e = s.size();
        if (left) {
          while (b < e) {
            size_t len = 0;
            if (!is_ws(utf8_decode_at(s, b, &len))) break;
            b += len;
          }
          if (b > 0) *lead_moved = true;
        }
        if (right) {
          while (e > b && is_ws(utf8_decode_before(s, e))) {
            size_t k = e - 1;
            while (k > b && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
            e = k;
          }
        }
        return s.substr(b, e - b);
      }
      case kPrepend:
        return s.empty() ? s : content + s;
    }
    return s;
  }
};

// The Replace regexes this class implements: a literal (escaped metacharacters allowed) or one character with a
// quantifier (+, {n}, {n,}, {n,m}; n >= 1), e.g. UMT5's " {2,}". Returns false for anything else.
bool parse_regex(const std::string& re, NormStep* step) {
  static const std::string meta = "\\.^$|?*+()[]{}";
  std::vector<std::string> chars;  // literal characters
  size_t i = 0;
  while (i < re.size()) {
    const char c = re[i];
    if (c == '\\') {
      if (i + 1 >= re.size() || meta.find(re[i + 1]) == std::string::npos) return false;
      chars.emplace_back(1, re[i + 1]);
      i += 2;
      continue;
    }
    if (c == '+' || c == '{') {
      if (chars.empty() || i == 0) return false;
      size_t lo = 1, hi = std::numeric_limits<size_t>::max();
      size_t end = i + 1;
      if (c == '{') {
        const size_t close = re.find('}', i);
        if (close == std::string::npos) return false;
        const std::string body = re.substr(i + 1, close - i - 1);
        const size_t comma = body.find(',');
        auto number = [](const std::string& t, size_t* out) {
          if (t.empty() || t.size() > 6 || t.find_first_not_of("0123456789") != std::string::npos) return false;
          *out = std::stoul(t);
          return true;
        };
        if (comma == std::string::npos) {
          if (!number(body, &lo)) return false;
          hi = lo;
        } else {
          if (!number(body.substr(0, comma), &lo)) return false;
          const std::string h = body.substr(comma + 1);
          if (!h.empty() && !number(h, &hi)) return false;
        }
        end = close + 1;
      }
      // Only a whole pattern of the form X<quantifier>.
      if (chars.size() != 1 || end != re.size() || lo < 1 || hi < lo) return false;
      step->kind = NormStep::kReplaceRun;
      step->pattern = chars[0];
      step->min_rep = lo;
      step->max_rep = hi;
      return true;
    }
    if (meta.find(c) != std::string::npos) return false;
    const size_t len = std::max<size_t>(1, utf8_sequence_length(re, i));
    chars.push_back(re.substr(i, len));
    i += len;
  }
  if (chars.empty()) return false;
  step->kind = NormStep::kReplaceString;
  step->pattern.clear();
  for (const auto& ch : chars) step->pattern += ch;
  return true;
}

// ---- pre-tokenizers ----------------------------------------------------------------------------------------

struct PreStep {
  enum Kind { kMetaspace, kWhitespaceSplit } kind = kMetaspace;
  enum Scheme { kAlways, kFirst, kNever } scheme = kAlways;
  std::string replacement = "\xE2\x96\x81";  // U+2581
  bool split = true;
};

// A piece of the text on its way through the pipeline: `id` >= 0 once it is an added token.
struct Piece {
  std::string text;
  bool at_origin = false;  // starts at byte 0 of the original text (Metaspace "first")
  int64_t id = -1;
};

void apply_pre(const PreStep& step, std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  out.reserve(pieces.size() * 2);
  for (Piece& p : pieces) {
    if (p.id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    const std::string& s = p.text;
    if (step.kind == PreStep::kWhitespaceSplit) {
      size_t i = 0, word = std::string::npos;
      while (i <= s.size()) {
        size_t len = 1;
        const bool ws = i == s.size() || is_ws(utf8_decode_at(s, i, &len));
        if (ws) {
          if (word != std::string::npos) out.push_back({s.substr(word, i - word), p.at_origin && word == 0, -1});
          word = std::string::npos;
          if (i == s.size()) break;
        } else if (word == std::string::npos) {
          word = i;
        }
        i += len;
      }
      continue;
    }
    // Metaspace: ' ' -> replacement, prepend, split before each replacement (MergedWithNext).
    std::string t;
    t.reserve(s.size() + 8);
    for (char c : s) {
      if (c == ' ')
        t += step.replacement;
      else
        t += c;
    }
    const bool starts = t.compare(0, step.replacement.size(), step.replacement) == 0;
    if (!t.empty() && !starts && (step.scheme == PreStep::kAlways || (step.scheme == PreStep::kFirst && p.at_origin)))
      t = step.replacement + t;
    if (!step.split) {
      if (!t.empty()) out.push_back({std::move(t), p.at_origin, -1});
      continue;
    }
    size_t begin = 0;
    const size_t rl = step.replacement.size();
    for (size_t i = 0; i < t.size();) {
      if (i > begin && t.compare(i, rl, step.replacement) == 0) {
        out.push_back({t.substr(begin, i - begin), p.at_origin && begin == 0, -1});
        begin = i;
      }
      i += (t.compare(i, rl, step.replacement) == 0) ? rl : utf8_sequence_length(t, i);
    }
    if (begin < t.size()) out.push_back({t.substr(begin), p.at_origin && begin == 0, -1});
  }
  pieces = std::move(out);
}

// ---- added tokens ------------------------------------------------------------------------------------------

struct AddedTok {
  std::string content;
  bool single_word = false, lstrip = false, rstrip = false, normalized = true, special = false;
  bool operator==(const AddedTok& o) const {
    return content == o.content && single_word == o.single_word && lstrip == o.lstrip && rstrip == o.rstrip &&
           normalized == o.normalized && special == o.special;
  }
};

// Leftmost-longest matching over a set of patterns (daachorse's MatchKind::LeftmostLongest).
struct Matcher {
  std::vector<std::vector<std::pair<std::string, int64_t>>> by_byte =
      std::vector<std::vector<std::pair<std::string, int64_t>>>(256);
  bool empty = true;

  void add(const std::string& pattern, int64_t id) {
    by_byte[static_cast<unsigned char>(pattern[0])].emplace_back(pattern, id);
    empty = false;
  }
  void finish() {
    for (auto& v : by_byte)
      std::stable_sort(v.begin(), v.end(),
                       [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  }
  // The leftmost-longest match at or after `from`: {start, end, id}; start = npos when none.
  std::tuple<size_t, size_t, int64_t> find(const std::string& s, size_t from) const {
    for (size_t i = from; i < s.size(); ++i) {
      const auto& cands = by_byte[static_cast<unsigned char>(s[i])];
      for (const auto& [pat, id] : cands)
        if (s.compare(i, pat.size(), pat) == 0) return {i, i + pat.size(), id};
    }
    return {std::string::npos, 0, -1};
  }
};

}  // namespace

// ---- the tokenizer -----------------------------------------------------------------------------------------

struct TokenizerJson::Impl {
  std::string path;
  UnigramModel model;
  std::vector<NormStep> normalizers;
  std::vector<PreStep> pre;
  // Added tokens: content -> id, id -> token (the last one added for an id), the two matchers.
  std::unordered_map<std::string, int64_t> added_ids;
  std::unordered_map<int64_t, AddedTok> added_by_id;
  Matcher raw_matcher, norm_matcher;
  // The single template: the ids before and after $A (none when the file has no post-processor).
  std::vector<int64_t> post_prefix, post_suffix;

  int64_t token_to_id(const std::string& t) const {
    const auto it = added_ids.find(t);
    if (it != added_ids.end()) return it->second;
    return model.lookup(t);
  }

  std::string normalize(const std::string& s, bool* lead_moved) const {
    std::string cur = s;
    for (const NormStep& n : normalizers) {
      bool moved = false;
      cur = n.apply(cur, &moved);
      if (moved) *lead_moved = true;
    }
    return cur;
  }

  // tokenizers' AddedVocabulary::add_tokens.
  void add_tokens(const std::vector<AddedTok>& toks) {
    const int64_t vocab = static_cast<int64_t>(model.pieces.size());
    int64_t next_id = vocab;
    if (!added_by_id.empty()) {
      int64_t mx = -1;
      for (const auto& kv : added_by_id) mx = std::max(mx, kv.first);
      next_id = mx >= vocab ? mx + 1 : vocab;
    }
    for (const AddedTok& t : toks) {
      if (t.content.empty()) continue;
      const auto have = added_ids.find(t.content);
      if (have != added_ids.end()) {
        const auto r = added_by_id.find(have->second);
        if (r != added_by_id.end() && r->second == t) continue;
      }
      int64_t id = token_to_id(t.content);
      if (id < 0) id = next_id++;
      added_ids[t.content] = id;
      added_by_id[id] = t;
    }
  }

  void build_matchers() {
    raw_matcher = Matcher();
    norm_matcher = Matcher();
    for (const auto& [id, t] : added_by_id) {
      if (t.normalized) {
        bool unused = false;
        const std::string n = normalize(t.content, &unused);
        if (!n.empty()) norm_matcher.add(n, id);
      } else {
        raw_matcher.add(t.content, id);
      }
    }
    raw_matcher.finish();
    norm_matcher.finish();
  }

  // AddedVocabulary::find_matches + split_with_indices on one piece; `out` gets the pieces in order.
  void split_added(const Piece& p, const Matcher& m, std::vector<Piece>& out) const {
    const std::string& s = p.text;
    if (m.empty || s.empty()) {
      if (!s.empty()) out.push_back(p);
      return;
    }
    size_t start_offset = 0, from = 0;
    auto emit = [&](size_t b, size_t e, int64_t id) {
      if (e <= b) return;
      out.push_back({s.substr(b, e - b), p.at_origin && b == 0, id});
    };
    while (true) {
      auto [mstart, mend, id] = m.find(s, from);
      if (mstart == std::string::npos) break;
      from = mend;
      size_t start = mstart, stop = mend;
      const AddedTok& tok = added_by_id.at(id);
      if (tok.single_word) {
        const bool start_space = start == 0 || !is_word(utf8_decode_before(s, start));
        size_t len = 0;
        const bool stop_space = stop == s.size() || !is_word(utf8_decode_at(s, stop, &len));
        if (!start_space || !stop_space) continue;
      }
      if (tok.lstrip) {
        size_t b = start;
        while (b > 0 && is_ws(utf8_decode_before(s, b))) {
          --b;
          while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
        }
        start = std::max(b, start_offset);
      }
      if (tok.rstrip) {
        while (stop < s.size()) {
          size_t len = 0;
          if (!is_ws(utf8_decode_at(s, stop, &len))) break;
          stop += len;
        }
      }
      if (start_offset < start) emit(start_offset, start, -1);
      emit(start, stop, id);
      start_offset = stop;
    }
    if (start_offset < s.size()) emit(start_offset, s.size(), -1);
  }
};

namespace {

std::vector<AddedTok> parse_added(const Doc& doc, const json& list, const std::string& where) {
  OMNI_CHECK_INPUT(list.is_array(), doc.path, ": '", where, "' must be a list, found ", list.type_name());
  std::vector<AddedTok> out;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string w = str_cat(where, "[", i, "]");
    const json& e = list[i];
    AddedTok t;
    t.content = doc.str(e, "content", w);
    t.special = doc.boolean(e, "special", w, false);
    t.single_word = doc.boolean(e, "single_word", w, false);
    t.lstrip = doc.boolean(e, "lstrip", w, false);
    t.rstrip = doc.boolean(e, "rstrip", w, false);
    t.normalized = doc.boolean(e, "normalized", w, !t.special);
    OMNI_CHECK_INPUT(utf8_invalid_at(t.content) == std::string::npos, doc.path, ": '", w, ".content' is not UTF-8");
    out.push_back(std::move(t));
  }
  return out;
}

void parse_normalizer(const Doc& doc, const json& n, const std::string& where, std::vector<NormStep>& out) {
  if (n.is_null()) return;
  const std::string type = doc.str(n, "type", where);
  if (type == "Sequence") {
    const json& list = doc.get(n, "normalizers", where);
    OMNI_CHECK_INPUT(list.is_array(), doc.path, ": '", where, ".normalizers' must be a list");
    for (size_t i = 0; i < list.size(); ++i)
      parse_normalizer(doc, list[i], str_cat(where, ".normalizers[", i, "]"), out);
    return;
  }
  NormStep step;
  if (type == "Replace") {
    const json& pat = doc.get(n, "pattern", where);
    step.content = doc.str(n, "content", where);
    if (const json* s = doc.find(pat, "String")) {
      OMNI_CHECK_INPUT(s->is_string() && !s->get<std::string>().empty(), doc.path, ": '", where,
                       ".pattern.String' must be a non-empty string, found ", s->dump());
      step.kind = NormStep::kReplaceString;
      step.pattern = s->get<std::string>();
    } else if (const json* r = doc.find(pat, "Regex")) {
      OMNI_CHECK_INPUT(r->is_string(), doc.path, ": '", where, ".pattern.Regex' must be a string");
      OMNI_CHECK_INPUT(parse_regex(r->get<std::string>(), &step), doc.path, ": '", where, ".pattern.Regex' ", r->dump(),
                       " is not supported (only a literal, or one character with +, {n}, {n,} or {n,m}, ",
                       "as in T5 tokenizers' \" {2,}\")");
    } else {
      OMNI_FAIL_INPUT(doc.path, ": '", where, ".pattern' must be {\"String\": ...} or {\"Regex\": ...}, found ",
                      pat.dump());
    }
  } else if (type == "Precompiled") {
    const json& blob = doc.get(n, "precompiled_charsmap", where);
    OMNI_CHECK_INPUT(blob.is_string(), doc.path, ": '", where, ".precompiled_charsmap' must be a base64 string");
    const std::string source = str_cat(doc.path, ": ", where, ".precompiled_charsmap");
    step.kind = NormStep::kPrecompiled;
    step.charsmap = std::make_shared<PrecompiledCharsmap>(
        PrecompiledCharsmap::base64_decode(blob.get<std::string>(), source), source);
  } else if (type == "Strip") {
    step.kind = NormStep::kStrip;
    step.left = doc.boolean(n, "strip_left", where, true);
    step.right = doc.boolean(n, "strip_right", where, true);
  } else if (type == "Prepend") {
    step.kind = NormStep::kPrepend;
    step.content = doc.str(n, "prepend", where);
  } else {
    OMNI_FAIL_INPUT(doc.path, ": '", where, ".type' is normalizer '", type,
                    "', which is not supported (only Sequence, Replace, Precompiled, Strip, Prepend)");
  }
  out.push_back(std::move(step));
}

void parse_pre(const Doc& doc, const json& p, const std::string& where, std::vector<PreStep>& out) {
  if (p.is_null()) return;
  const std::string type = doc.str(p, "type", where);
  if (type == "Sequence") {
    const json& list = doc.get(p, "pretokenizers", where);
    OMNI_CHECK_INPUT(list.is_array(), doc.path, ": '", where, ".pretokenizers' must be a list");
    for (size_t i = 0; i < list.size(); ++i) parse_pre(doc, list[i], str_cat(where, ".pretokenizers[", i, "]"), out);
    return;
  }
  PreStep step;
  if (type == "WhitespaceSplit") {
    step.kind = PreStep::kWhitespaceSplit;
  } else if (type == "Metaspace") {
    step.kind = PreStep::kMetaspace;
    step.replacement = doc.str(p, "replacement", where);
    size_t len = 0;
    OMNI_CHECK_INPUT(!step.replacement.empty() && utf8_invalid_at(step.replacement) == std::string::npos &&
                         (utf8_decode_at(step.replacement, 0, &len), len == step.replacement.size()),
                     doc.path, ": '", where, ".replacement' must be one character, found '", step.replacement, "'");
    step.split = doc.boolean(p, "split", where, true);
    step.scheme = PreStep::kAlways;
    const json* scheme = doc.find(p, "prepend_scheme");
    if (scheme != nullptr && !scheme->is_null()) {
      OMNI_CHECK_INPUT(scheme->is_string(), doc.path, ": '", where, ".prepend_scheme' must be a string");
      const std::string s = scheme->get<std::string>();
      if (s == "always")
        step.scheme = PreStep::kAlways;
      else if (s == "first")
        step.scheme = PreStep::kFirst;
      else if (s == "never")
        step.scheme = PreStep::kNever;
      else
        OMNI_FAIL_INPUT(doc.path, ": '", where, ".prepend_scheme' is '", s, "', expected always, first or never");
    }
    const json* aps = doc.find(p, "add_prefix_space");
    if (aps != nullptr && !aps->is_null()) {
      OMNI_CHECK_INPUT(aps->is_boolean(), doc.path, ": '", where, ".add_prefix_space' must be true or false");
      if (!aps->get<bool>()) {
        OMNI_CHECK_INPUT(step.scheme != PreStep::kFirst &&
                             (scheme == nullptr || step.scheme == PreStep::kNever || scheme->is_null()),
                         doc.path, ": '", where, "': add_prefix_space does not match declared prepend_scheme");
        step.scheme = PreStep::kNever;
      }
    }
  } else {
    OMNI_FAIL_INPUT(doc.path, ": '", where, ".type' is pre-tokenizer '", type,
                    "', which is not supported (only Metaspace, WhitespaceSplit, Sequence)");
  }
  out.push_back(std::move(step));
}

}  // namespace

TokenizerJson::TokenizerJson(const std::string& path, Loader loader, int extra_ids) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.path = path;
  Doc doc{path};
  const json root = io::read_json(path);
  OMNI_CHECK_INPUT(root.is_object(), path, ": a tokenizer.json must be a JSON object");

  // The model.
  const json& model = doc.get(root, "model", "");
  {
    const json* type = doc.find(model, "type");
    OMNI_CHECK_INPUT(type == nullptr || type->is_string(), path, ": 'model.type' must be a string");
    const std::string t = type ? type->get<std::string>() : "Unigram";
    OMNI_CHECK_INPUT(t == "Unigram", path, ": 'model.type' is '", t, "', which is not supported (only Unigram)");
    const json& vocab = doc.get(model, "vocab", "model");
    OMNI_CHECK_INPUT(vocab.is_array() && !vocab.empty(), path,
                     ": 'model.vocab' must be a non-empty list of [piece, score] pairs");
    im.model.pieces.reserve(vocab.size());
    im.model.scores.reserve(vocab.size());
    for (size_t i = 0; i < vocab.size(); ++i) {
      const json& e = vocab[i];
      OMNI_CHECK_INPUT(e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_number(), path, ": 'model.vocab[",
                       i, "]' must be a [piece, score] pair, found ", e.dump());
      im.model.pieces.push_back(e[0].get<std::string>());
      im.model.scores.push_back(e[1].get<double>());
      OMNI_CHECK_INPUT(utf8_invalid_at(im.model.pieces.back()) == std::string::npos, path, ": 'model.vocab[", i,
                       "]' is not UTF-8");
    }
    const json* unk = doc.find(model, "unk_id");
    if (unk != nullptr && !unk->is_null()) {
      OMNI_CHECK_INPUT(unk->is_number_integer() && unk->get<int64_t>() >= 0, path,
                       ": 'model.unk_id' must be a non-negative integer, found ", unk->dump());
      im.model.unk_id = unk->get<int64_t>();
      OMNI_CHECK_INPUT(im.model.unk_id < static_cast<int64_t>(vocab.size()), path, ": 'model.unk_id' ", im.model.unk_id,
                       " is not in the vocabulary of ", vocab.size(), " pieces");
    }
    im.model.byte_fallback = doc.boolean(model, "byte_fallback", "model", false);
    im.model.source = path;
  }
  if (loader == Loader::kT5FromPretrained) {
    // T5Tokenizer.__init__: Unigram(vocab, unk_id=2, byte_fallback=False).
    OMNI_CHECK_INPUT(im.model.pieces.size() > 2, path, ": 'model.vocab' has fewer than 3 pieces (T5 unk_id is 2)");
    im.model.unk_id = 2;
    im.model.byte_fallback = false;
  }
  im.model.build();

  // Normalizer and pre-tokenizer.
  const json* norm = doc.find(root, "normalizer");
  if (loader == Loader::kT5FromPretrained) {
    // Only a Precompiled normalizer survives (the first one, at the top or inside a Sequence).
    if (norm != nullptr && norm->is_object()) {
      std::vector<std::pair<const json*, std::string>> cands;
      if (norm->value("type", "") == "Sequence" && norm->contains("normalizers") && (*norm)["normalizers"].is_array()) {
        const json& list = (*norm)["normalizers"];
        for (size_t i = 0; i < list.size(); ++i)
          cands.emplace_back(&list[i], str_cat("normalizer.normalizers[", i, "]"));
      } else {
        cands.emplace_back(norm, "normalizer");
      }
      for (const auto& [n, w] : cands) {
        if (n->is_object() && n->value("type", "") == "Precompiled" && n->contains("precompiled_charsmap")) {
          parse_normalizer(doc, *n, w, im.normalizers);
          break;
        }
      }
    }
    PreStep ws;
    ws.kind = PreStep::kWhitespaceSplit;
    PreStep ms;
    ms.kind = PreStep::kMetaspace;
    im.pre = {ws, ms};
  } else {
    if (norm != nullptr) parse_normalizer(doc, *norm, "normalizer", im.normalizers);
    if (const json* pre = doc.find(root, "pre_tokenizer")) parse_pre(doc, *pre, "pre_tokenizer", im.pre);
  }

  // Added tokens, as tokenizers' deserializer adds them, then the T5 ones transformers adds.
  if (const json* added = doc.find(root, "added_tokens"); added != nullptr && !added->is_null())
    im.add_tokens(parse_added(doc, *added, "added_tokens"));
  if (loader != Loader::kTokenizers) {
    std::vector<AddedTok> t5;
    auto special = [](const std::string& c) {
      AddedTok t;
      t.content = c;
      t.special = true;
      t.normalized = false;
      return t;
    };
    for (const char* c : {"</s>", "<unk>", "<pad>"})
      if (!im.added_ids.count(c)) t5.push_back(special(c));
    for (int i = 0; i < extra_ids; ++i) {
      const std::string c = str_cat("<extra_id_", i, ">");
      if (!im.added_ids.count(c)) t5.push_back(special(c));
    }
    if (!t5.empty()) im.add_tokens(t5);
  }
  im.build_matchers();

  // Post-processor.
  if (loader != Loader::kTokenizers) {
    const int64_t eos = im.token_to_id("</s>");
    OMNI_CHECK_INPUT(eos >= 0, path, ": no '</s>' token (T5's eos)");
    im.post_suffix = {eos};
  } else if (const json* post = doc.find(root, "post_processor"); post != nullptr && !post->is_null()) {
    const std::string type = doc.str(*post, "type", "post_processor");
    OMNI_CHECK_INPUT(type == "TemplateProcessing", path, ": 'post_processor.type' is '", type,
                     "', which is not supported (only TemplateProcessing)");
    const json& single = doc.get(*post, "single", "post_processor");
    const json& specials = doc.get(*post, "special_tokens", "post_processor");
    OMNI_CHECK_INPUT(single.is_array(), path, ": 'post_processor.single' must be a list");
    bool seen_a = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string w = str_cat("post_processor.single[", i, "]");
      const json& item = single[i];
      if (const json* seq = doc.find(item, "Sequence")) {
        const std::string id = doc.str(*seq, "id", w + ".Sequence");
        OMNI_CHECK_INPUT(id == "A" && !seen_a, path, ": '", w, ".Sequence.id' must be A, once, found ", id);
        seen_a = true;
      } else if (const json* sp = doc.find(item, "SpecialToken")) {
        const std::string id = doc.str(*sp, "id", w + ".SpecialToken");
        const json& entry = doc.get(specials, id, "post_processor.special_tokens");
        const json& ids = doc.get(entry, "ids", "post_processor.special_tokens." + id);
        OMNI_CHECK_INPUT(ids.is_array(), path, ": 'post_processor.special_tokens.", id, ".ids' must be a list");
        for (const json& x : ids) {
          OMNI_CHECK_INPUT(x.is_number_integer(), path, ": 'post_processor.special_tokens.", id,
                           ".ids' must hold integers");
          (seen_a ? im.post_suffix : im.post_prefix).push_back(x.get<int64_t>());
        }
      } else {
        OMNI_FAIL_INPUT(path, ": '", w, "' must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, found ",
                        item.dump());
      }
    }
    OMNI_CHECK_INPUT(seen_a, path, ": 'post_processor.single' has no $A");
  }
}

TokenizerJson::~TokenizerJson() = default;
TokenizerJson::TokenizerJson(TokenizerJson&&) noexcept = default;
TokenizerJson& TokenizerJson::operator=(TokenizerJson&&) noexcept = default;

std::vector<int64_t> TokenizerJson::encode(const std::string& text, bool add_special_tokens) const {
  const Impl& im = *impl_;
  const size_t bad = utf8_invalid_at(text);
  OMNI_CHECK_USAGE(bad == std::string::npos, "the text to tokenize is not valid UTF-8 (byte ", bad, ")");
  // 1. added tokens on the raw text; 2. normalize the rest, added tokens on the normalized text.
  std::vector<Piece> raw;
  im.split_added(Piece{text, true, -1}, im.raw_matcher, raw);
  std::vector<Piece> pieces;
  for (Piece& p : raw) {
    if (p.id >= 0) {
      pieces.push_back(std::move(p));
      continue;
    }
    bool lead_moved = false;
    Piece n{im.normalize(p.text, &lead_moved), p.at_origin && !lead_moved, -1};
    im.split_added(n, im.norm_matcher, pieces);
  }
  // 3. pre-tokenize; 4. the model.
  for (const PreStep& step : im.pre) apply_pre(step, pieces);
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = im.post_prefix;
  for (const Piece& p : pieces) {
    if (p.id >= 0)
      ids.push_back(p.id);
    else
      im.model.encode(p.text, ids);
  }
  if (add_special_tokens) ids.insert(ids.end(), im.post_suffix.begin(), im.post_suffix.end());
  return ids;
}

int64_t TokenizerJson::token_to_id(const std::string& token) const {
  return impl_->token_to_id(token);
}
bool TokenizerJson::is_added_token(const std::string& token) const {
  return impl_->added_ids.count(token) > 0;
}
int64_t TokenizerJson::pad_id() const {
  return impl_->token_to_id("<pad>");
}
int64_t TokenizerJson::eos_id() const {
  return impl_->token_to_id("</s>");
}
int64_t TokenizerJson::unk_id() const {
  return impl_->model.unk_id;
}
int64_t TokenizerJson::vocab_size() const {
  int64_t n = static_cast<int64_t>(impl_->model.size());
  for (const auto& kv : impl_->added_ids)
    if (impl_->model.lookup(kv.first) < 0) ++n;
  return n;
}
const std::string& TokenizerJson::path() const {
  return impl_->path;
}

}  // namespace omni::text
