// See precompiled_charsmap.h. Written from the behaviour of the spm_precompiled crate (0.1.4) and of
// tokenizers' normalizers/precompiled.rs, checked text by text against tokenizers' Python binding by
// tests/text/precompiled_check.py.
//
// Grapheme clusters. tokenizers 0.23 segments with the unicode-segmentation crate 1.13 (Unicode 17 data; seen
// from the Python binding: U+1ACF, new in 17.0, extends a cluster there); ICU 72 implements Unicode 15.0 with
// CLDR 42's rules. The differences, and what they do here:
// - Code points assigned after 15.0 that are Extend or SpacingMark now (U+0897, U+1ACF..U+1AEB, and some in
//   the supplementary planes) are unassigned, hence Other, to ICU 72: it breaks before them where tokenizers
//   does not. That is visible: "½" + U+0897 is one 5-byte grapheme to tokenizers, replaced as a whole by "1⁄2"
//   (the mark dropped), while ICU's two clusters keep the mark. kLateExtend below lists them; a boundary ICU
//   puts before one of them is dropped (GB9 / GB9a, unless after a control, GB4), and likewise after the one
//   late Prepend (GB9b, unless before a control, GB5). Only where ICU says the code point is unassigned, so a
//   newer ICU's own data wins. The list is the unicode-segmentation 1.13.2 table (src/tables.rs) compared
//   with ICU 72's Grapheme_Cluster_Break over all code points; ICU 72 had no other Extend / SpacingMark / ZWJ
//   / Prepend differences except U+11A3A (Prepend to ICU, Other since Unicode 16), which cannot matter: it is
//   4 bytes and no key, so any cluster it starts is either 6 bytes or more or finds no key.
// - Indic conjuncts (Unicode 15.1's GB9c: consonant, virama, consonant as one cluster): ICU 72 already joins
//   them through CLDR's tailoring, for the same six scripts (Devanagari, Bengali, Gujarati, Oriya, Telugu,
//   Malayalam). Should the sets of linkers / extends differ in a corner, it does not show: those letters and
//   viramas take 3 bytes each, so a cluster either rule joins is 9 bytes or more and goes code point by code
//   point, and so do the pieces the other rule would make (one code point, whose whole-grapheme lookup is its
//   code-point lookup, or consonant + virama, 6 bytes).
// The check runs every code point of Unicode in sequence, and after 2-byte keys ("½", NBSP), without a
// difference.
#include "text/precompiled_charsmap.h"

#include <unicode/brkiter.h>
#include <unicode/locid.h>
#include <unicode/uchar.h>
#include <unicode/utext.h>

#include <climits>
#include <cstdint>
#include <memory>

#include "core/error.h"
#include "text/utf8.h"

namespace omni::text {
namespace {

uint32_t read_le32(const std::string& blob, size_t offset) {
  const auto b = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(blob[offset + k])); };
  return b(0) | (b(1) << 8) | (b(2) << 16) | (b(3) << 24);
}

// Darts (darts-clone) double-array unit layout, 32 bits:
//   bits 0-7 label byte, bit 8 "has a leaf child", bit 9 "offset is shifted by 8", bits 10-31 offset; a leaf
//   unit has bit 31 set and keeps its value in bits 0-30. Folding bit 31 into the label makes a leaf unit
//   never match a label byte.
bool unit_has_leaf(uint32_t unit) {
  return ((unit >> 8) & 1u) == 1u;
}
uint32_t unit_value(uint32_t unit) {
  return unit & 0x7FFFFFFFu;
}
uint32_t unit_label(uint32_t unit) {
  return unit & (0x80000000u | 0xFFu);
}
uint32_t unit_offset(uint32_t unit) {
  return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

// Extend or SpacingMark code points of Unicode 17 (unicode-segmentation 1.13) that ICU 72 does not know (see the
// top of the file); sorted, inclusive ranges.
constexpr char32_t kLateExtend[][2] = {
    {0x0897, 0x0897},   {0x1ACF, 0x1ADD},   {0x1AE0, 0x1AEB},   {0x10D69, 0x10D6D}, {0x10EFA, 0x10EFC},
    {0x113B8, 0x113C0}, {0x113C2, 0x113C2}, {0x113C5, 0x113C5}, {0x113C7, 0x113CA}, {0x113CC, 0x113D0},
    {0x113D2, 0x113D2}, {0x113E1, 0x113E2}, {0x11B60, 0x11B67}, {0x11F5A, 0x11F5A}, {0x1611E, 0x1612F},
    {0x1E5EE, 0x1E5EF}, {0x1E6E3, 0x1E6E3}, {0x1E6E6, 0x1E6E6}, {0x1E6EE, 0x1E6EF}, {0x1E6F5, 0x1E6F5},
};
// Prepend code points of Unicode 17 that ICU 72 does not know.
constexpr char32_t kLatePrepend = 0x113D1;

bool is_late_extend(char32_t cp) {
  for (const auto& range : kLateExtend) {
    if (cp < range[0]) return false;
    if (cp <= range[1]) return u_charType(static_cast<UChar32>(cp)) == U_UNASSIGNED;
  }
  return false;
}

bool is_control_break(char32_t cp) {  // Grapheme_Cluster_Break Control, CR or LF (GB4 / GB5)
  const int gcb = u_getIntPropertyValue(static_cast<UChar32>(cp), UCHAR_GRAPHEME_CLUSTER_BREAK);
  return gcb == U_GCB_CONTROL || gcb == U_GCB_CR || gcb == U_GCB_LF;
}

// Whether the boundary ICU 72 reports at byte `at` (0 < at < size) is one unicode-segmentation 1.13 would not
// make, because of a code point ICU does not know yet.
bool late_no_break(const std::string& s, size_t at) {
  size_t len = 0;
  const char32_t before = utf8_decode_before(s, at);
  const char32_t after = utf8_decode_at(s, at, &len);
  if (is_late_extend(after)) return !is_control_break(before);
  if (before == kLatePrepend && u_charType(static_cast<UChar32>(before)) == U_UNASSIGNED) {
    return !is_control_break(after);
  }
  return false;
}

// The ICU objects owned for one normalize() call.
struct UTextCloser {
  void operator()(UText* t) const { utext_close(t); }
};

}  // namespace

PrecompiledCharsmap::PrecompiledCharsmap(const std::string& blob, const std::string& source) : source_(source) {
  OMNI_CHECK_INPUT(blob.size() >= 4, source, ": precompiled charsmap of ", blob.size(),
                   " bytes is shorter than its 4-byte trie size header");
  const uint32_t trie_size = read_le32(blob, 0);
  // tokenizers reads trie_size / 4 units and starts the pool right after them; SentencePiece takes the pool
  // from 4 + trie_size. The two agree only for a multiple of 4, which is all Darts writes, so anything else is
  // refused rather than guessed at.
  OMNI_CHECK_INPUT(trie_size % 4 == 0, source, ": precompiled charsmap trie size ", trie_size,
                   " is not a multiple of 4 (Darts units are 4 bytes)");
  // tokenizers would panic on its first lookup into an empty trie (it reads the root unit unconditionally).
  OMNI_CHECK_INPUT(trie_size >= 4, source, ": precompiled charsmap has an empty trie (size 0)");
  OMNI_CHECK_INPUT(static_cast<uint64_t>(trie_size) <= blob.size() - 4, source, ": precompiled charsmap trie size ",
                   trie_size, " runs past the blob's end (", blob.size() - 4, " bytes after the header)");
  units_.resize(trie_size / 4);
  for (size_t i = 0; i < units_.size(); ++i) units_[i] = read_le32(blob, 4 + 4 * i);
  pool_ = blob.substr(4 + static_cast<size_t>(trie_size));
  // tokenizers keeps the pool as a Rust String, so it refuses a pool that is not UTF-8 when it is built.
  const size_t bad = utf8_invalid_at(pool_);
  OMNI_CHECK_INPUT(bad == std::string::npos, source, ": precompiled charsmap's string pool is not valid UTF-8 (",
                   "byte ", bad, " of the ", pool_.size(), "-byte pool)");
}

bool PrecompiledCharsmap::transform(const char* key, size_t size, const char** out, size_t* out_size) const {
  // Common prefix search, but only its first (shortest) result is ever used by tokenizers, so stop there.
  const auto unit_at = [&](size_t pos) {
    OMNI_CHECK_INPUT(pos < units_.size(), source_, ": precompiled charsmap trie is malformed: a lookup reaches unit ",
                     pos, " of ", units_.size());
    return units_[pos];
  };
  size_t node = unit_offset(unit_at(0));
  for (size_t i = 0; i < size; ++i) {
    const auto c = static_cast<unsigned char>(key[i]);
    if (c == 0) break;  // keys are C strings: a NUL ends the lookup
    node ^= c;
    const uint32_t unit = unit_at(node);
    if (unit_label(unit) != c) return false;
    node ^= unit_offset(unit);
    if (unit_has_leaf(unit)) {
      const size_t begin = unit_value(unit_at(node));
      // A value equal to the pool's size names the empty string (tokenizers slices [size, size)); past it, or
      // inside a UTF-8 sequence, tokenizers would panic slicing its String.
      OMNI_CHECK_INPUT(begin <= pool_.size(), source_, ": precompiled charsmap trie value ", begin,
                       " is past the end of its ", pool_.size(), "-byte string pool");
      OMNI_CHECK_INPUT(begin == pool_.size() || (static_cast<unsigned char>(pool_[begin]) & 0xC0) != 0x80, source_,
                       ": precompiled charsmap trie value ", begin, " points inside a UTF-8 sequence of its pool");
      size_t end = pool_.find('\0', begin);
      if (end == std::string::npos) end = pool_.size();
      *out = pool_.data() + begin;
      *out_size = end - begin;
      return true;
    }
  }
  return false;
}

std::string PrecompiledCharsmap::normalize(const std::string& utf8) const {
  const size_t bad = utf8_invalid_at(utf8);
  OMNI_CHECK_INPUT(bad == std::string::npos, "text to normalize with the precompiled charsmap of ", source_,
                   " is not valid UTF-8 (byte ", bad, ")");
  std::string result;
  result.reserve(utf8.size() + utf8.size() / 4);
  if (utf8.empty()) return result;
  // BreakIterator reports boundaries as int32_t, even over a UText of 64-bit native offsets.
  OMNI_CHECK_INPUT(utf8.size() < static_cast<size_t>(INT32_MAX), "text of ", utf8.size(),
                   " bytes is too long to normalize with the precompiled charsmap of ", source_, " (2 GiB at most)");

  // Segment on the UTF-8 bytes directly: with a UTF-8 UText, ICU's boundaries are byte offsets.
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<UText, UTextCloser> text(
      utext_openUTF8(nullptr, utf8.data(), static_cast<int64_t>(utf8.size()), &status));
  OMNI_CHECK(U_SUCCESS(status), "ICU utext_openUTF8 failed: ", u_errorName(status));
  std::unique_ptr<icu::BreakIterator> graphemes(
      icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
  OMNI_CHECK(U_SUCCESS(status) && graphemes,
             "ICU BreakIterator::createCharacterInstance failed: ", u_errorName(status));
  graphemes->setText(text.get(), status);
  OMNI_CHECK(U_SUCCESS(status), "ICU BreakIterator::setText failed: ", u_errorName(status));

  const char* out = nullptr;
  size_t out_size = 0;
  int32_t begin = graphemes->first();
  for (int32_t end = graphemes->next(); end != icu::BreakIterator::DONE; begin = end, end = graphemes->next()) {
    while (static_cast<size_t>(end) < utf8.size() && late_no_break(utf8, static_cast<size_t>(end))) {
      const int32_t next = graphemes->next();
      if (next == icu::BreakIterator::DONE) break;
      end = next;
    }
    const char* g = utf8.data() + begin;
    const size_t g_size = static_cast<size_t>(end - begin);
    // The whole grapheme is tried only when it is shorter than 6 bytes (tokenizers' `grapheme.len() < 6`).
    if (g_size < 6 && transform(g, g_size, &out, &out_size)) {
      result.append(out, out_size);
      continue;
    }
    for (size_t i = 0; i < g_size;) {
      const size_t len = utf8_sequence_length(utf8, static_cast<size_t>(begin) + i);
      if (transform(g + i, len, &out, &out_size)) {
        result.append(out, out_size);
      } else {
        result.append(g + i, len);
      }
      i += len;
    }
  }
  return result;
}

std::string PrecompiledCharsmap::base64_decode(const std::string& text, const std::string& source) {
  const auto sextet = [](char ch) -> int {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
  };
  OMNI_CHECK_INPUT(text.size() % 4 == 0, source, ": base64 text of ", text.size(),
                   " characters is not padded to a multiple of 4");
  size_t padding = 0;
  while (padding < 2 && padding < text.size() && text[text.size() - 1 - padding] == '=') ++padding;
  std::string bytes;
  bytes.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  const size_t data_size = text.size() - padding;
  for (size_t i = 0; i < data_size; ++i) {
    const int v = sextet(text[i]);
    OMNI_CHECK_INPUT(v >= 0, source, ": invalid base64 character at offset ", i, " (byte ",
                     static_cast<int>(static_cast<unsigned char>(text[i])), ")");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes.push_back(static_cast<char>((acc >> bits) & 0xFFu));
    }
  }
  // One '=' leaves 2 spare bits, two leave 4; they must be zero in canonical base64 (which the Rust decoder
  // insists on). A final quad with a single data character (3 '=') cannot occur since at most 2 are taken.
  OMNI_CHECK_INPUT((acc & ((1u << bits) - 1u)) == 0, source, ": base64 text has non-zero trailing bits");
  return bytes;
}

}  // namespace omni::text
