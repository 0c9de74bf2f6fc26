// ftfy's mojibake repair (ftfy.fix_encoding and ftfy.badness.is_bad, 6.3.1): see fix_encoding.h.
//
// Where the data comes from: ftfy's character classes (its badness heuristic and the UTF-8 clues) and the ten
// single-byte encodings it tries are generated from ftfy itself by tools/unicode/ftfy_tables.py into
// fix_text_tables.inc, so they are ftfy's sets exactly, under Python's Unicode version. ICU supplies the
// properties behind the regex classes \d and \w. Python 3.11 has Unicode 14 and ICU 72 Unicode 15; they differ
// only on characters new in 15.
//
// ftfy is written as regular expressions; each one here is a hand-written matcher that reproduces what
// Python's engine returns for that pattern (leftmost match, alternatives in order, greedy repetition), with
// the pattern quoted above it.

#include "text/fix_encoding.h"

#include <unicode/uchar.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <unordered_map>
#include <vector>

#include "text/ftfy_tables.h"
#include "text/utf8.h"

namespace omni::text::ftfy {
namespace {

constexpr size_t kNumCharmaps = sizeof(kCharmaps) / sizeof(kCharmaps[0]);
constexpr size_t kLatin1 = 0;      // kCharmaps[0] is "latin-1"
constexpr size_t kSloppy1252 = 1;  // kCharmaps[1] is "sloppy-windows-1252"
constexpr size_t kMacRoman = 8;    // kCharmaps[8] is "macroman"

constexpr bool same_name(const char* a, const char* b) {
  return *a == *b && (*a == 0 || same_name(a + 1, b + 1));
}
static_assert(kNumCharmaps == 10 && same_name(kCharmaps[kLatin1].name, "latin-1") &&
                  same_name(kCharmaps[kSloppy1252].name, "sloppy-windows-1252") &&
                  same_name(kCharmaps[kMacRoman].name, "macroman"),
              "fix_text_tables.inc no longer lists ftfy's encodings in the order this file assumes");

// ---- character classes -------------------------------------------------------------------------------------

// The class bits of every BMP code point in one array (256 KiB): the badness test looks at each character of
// the text several times, and no class holds a code point past U+FFFF (checked on first use).
const std::vector<uint32_t>& class_table() {
  static const auto* table = [] {
    auto* t = new std::vector<uint32_t>(0x10000, 0);
    for (const auto& r : kClassRanges) {
      if (r.last > 0xFFFF) std::abort();  // the generator's data changed shape; this lookup would be wrong
      for (char32_t c = r.first; c <= r.last; ++c) (*t)[c] = r.bits;
    }
    return t;
  }();
  return *table;
}

inline uint32_t classes_of(char32_t c) {
  static const std::vector<uint32_t>& table = class_table();
  return c < 0x10000 ? table[c] : 0;
}

// A text with its class bits alongside, so that the matchers below read them without lookups; positions
// past the end read as code point 0 with no classes, which no pattern element accepts where it matters
// (every check that could accept 0 tests the position first).
struct Classified {
  const std::u32string& s;
  std::vector<uint32_t> bits;
  explicit Classified(const std::u32string& text) : s(text), bits(text.size()) {
    for (size_t i = 0; i < text.size(); ++i) bits[i] = classes_of(text[i]);
  }
  size_t size() const { return s.size(); }
  char32_t at(size_t i) const { return i < s.size() ? s[i] : 0; }
  uint32_t cls(size_t i) const { return i < s.size() ? bits[i] : 0; }
  bool has(size_t i, uint32_t mask) const { return (cls(i) & mask) != 0; }
};

bool is_ascii_letter(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool is_lower_ascii(char32_t c) {
  return c >= 'a' && c <= 'z';
}
bool one_of(char32_t c, const char32_t* set) {
  for (; *set; ++set)
    if (*set == c) return true;
  return false;
}

// Python's \w for str patterns: str.isalnum() (letters, and anything with a numeric value) or '_'.
bool is_py_word(char32_t c) {
  if (c == '_') return true;
  if (c < 0x80) return is_ascii_letter(c) || (c >= '0' && c <= '9');
  if ((U_GET_GC_MASK(static_cast<UChar32>(c)) & (U_GC_L_MASK | U_GC_N_MASK)) != 0) return true;
  return u_getNumericValue(static_cast<UChar32>(c)) != U_NO_NUMERIC_VALUE;
}

// ---- ftfy.badness.is_bad -----------------------------------------------------------------------------------

constexpr uint32_t kC1 = kClassC1, kBad = kClassBad, kLaw = kClassLaw, kCur = kClassCurrency,
                   kStart = kClassStartPunctuation, kEnd = kClassEndPunctuation, kNum = kClassNumeric,
                   kKao = kClassKaomoji, kUpA = kClassUpperAccented, kLoA = kClassLowerAccented,
                   kUpC = kClassUpperCommon, kLoC = kClassLowerCommon, kBox = kClassBox, kCommon = kClassCommon;

// Whether one of the alternatives of ftfy's BADNESS_RE matches at position i. is_bad is "the pattern matches
// somewhere", so the order of the alternatives does not matter here; they are listed in ftfy's order, with
// ftfy's category names in brackets.
bool bad_at(const Classified& t, size_t i) {
  const char32_t a = t.at(i), b = t.at(i + 1), c = t.at(i + 2);
  const uint32_t A = t.cls(i), B = t.cls(i + 1), C = t.cls(i + 2);
  const bool have_b = i + 1 < t.size(), have_c = i + 2 < t.size();
  if (!have_b) return (A & kC1) != 0;
  if (a < 0x80) {
    // No ASCII character is in any of ftfy's categories, so only the alternatives that start with an ASCII
    // letter, whitespace or ".,?!" can match here (the same tests as below, in the same order).
    if (is_ascii_letter(a) && (B & (kLoC | kUpC)) && (C & kBad)) return true;
    if (is_py_space(a) && (B & kUpA) && (C & kCur)) return true;
    if (is_lower_ascii(a) && (B & kUpA) && (C & (kStart | kCur))) return true;
    if (is_lower_ascii(a)) {
      if ((b == U'Ã' || b == U'Â') && c == U' ' && have_c) return true;
      if (is_py_space(b) && (c == U'Ã' || c == U'Â') && t.at(i + 3) == U' ' && i + 3 < t.size()) return true;
    }
    return (is_lower_ascii(a) || a == '.' || a == ',' || a == '?' || a == '!') && b == U'Â' && have_c &&
           (c == U' ' || (C & (kStart | kEnd)));
  }
  // [c1]
  if (A & kC1) return true;
  // [bad lower_accented upper_accented box start_punctuation end_punctuation currency numeric law] [bad]
  if ((A & (kBad | kLoA | kUpA | kBox | kStart | kEnd | kCur | kNum | kLaw)) && (B & kBad)) return true;
  // [a-zA-Z] [lower_common upper_common] [bad]
  if (is_ascii_letter(a) && (B & (kLoC | kUpC)) && (C & kBad)) return true;
  // [bad] [lower_accented upper_accented box start_punctuation end_punctuation currency numeric law]
  if ((A & kBad) && (B & (kLoA | kUpA | kBox | kStart | kEnd | kCur | kNum | kLaw))) return true;
  // [lower_accented lower_common box end_punctuation currency numeric] [upper_accented]
  if ((A & (kLoA | kLoC | kBox | kEnd | kCur | kNum)) && (B & kUpA)) return true;
  // [box end_punctuation currency numeric] [lower_accented]
  if ((A & (kBox | kEnd | kCur | kNum)) && (B & kLoA)) return true;
  // [lower_accented box end_punctuation] [currency]
  if ((A & (kLoA | kBox | kEnd)) && (B & kCur)) return true;
  // \s [upper_accented] [currency]
  if (is_py_space(a) && (B & kUpA) && (C & kCur)) return true;
  // [upper_accented box] [numeric law]
  if ((A & (kUpA | kBox)) && (B & (kNum | kLaw))) return true;
  // [lower_accented upper_accented box currency end_punctuation] [start_punctuation] [numeric]
  if ((A & (kLoA | kUpA | kBox | kCur | kEnd)) && (B & kStart) && (C & kNum)) return true;
  // [lower_accented upper_accented currency numeric box law] [end_punctuation] [start_punctuation]
  if ((A & (kLoA | kUpA | kCur | kNum | kBox | kLaw)) && (B & kEnd) && (C & kStart)) return true;
  // [currency numeric box] [start_punctuation]
  if ((A & (kCur | kNum | kBox)) && (B & kStart)) return true;
  // [a-z] [upper_accented] [start_punctuation currency]
  if (is_lower_ascii(a) && (B & kUpA) && (C & (kStart | kCur))) return true;
  // [box] [kaomoji]
  if ((A & kBox) && (B & kKao)) return true;
  // [lower_accented upper_accented currency numeric start_punctuation end_punctuation law] [box]
  if ((A & (kLoA | kUpA | kCur | kNum | kStart | kEnd | kLaw)) && (B & kBox)) return true;
  // [box] [end_punctuation]
  if ((A & kBox) && (B & kEnd)) return true;
  // [lower_accented upper_accented] [start_punctuation end_punctuation] \w
  if ((A & (kLoA | kUpA)) && (B & (kStart | kEnd)) && have_c && is_py_word(c)) return true;
  // [Œœ][^A-Za-z]   (the ligature not followed by an unaccented Latin letter)
  if ((a == U'Œ' || a == U'œ') && !is_ascii_letter(b)) return true;
  // [upper_accented]°
  if ((A & kUpA) && b == U'°') return true;
  // [ÂÃÎÐ][€œŠš¢£Ÿž\xa0\xad®©°·»{start_punctuation}{end_punctuation}–—´]
  if (one_of(a, U"ÂÃÎÐ") && (one_of(b, U"€œŠš¢£Ÿž\u00a0\u00ad®©°·»–—´") || (B & (kStart | kEnd)))) return true;
  // × [²³]
  if (a == U'×' && (b == U'²' || b == U'³')) return true;
  // [ØÙ] [common currency bad numeric start_punctuation ŸŠ®°µ»] twice (Arabic read as windows-1252)
  {
    auto arabic_second = [](char32_t ch, uint32_t cl) {
      return (cl & (kCommon | kCur | kBad | kNum | kStart)) != 0 || one_of(ch, U"ŸŠ®°µ»");
    };
    if ((a == U'Ø' || a == U'Ù') && arabic_second(b, B) && (c == U'Ø' || c == U'Ù') && i + 3 < t.size() &&
        arabic_second(t.at(i + 3), t.cls(i + 3)))
      return true;
  }
  // à[²µ¹¼½¾]
  if (a == U'à' && one_of(b, U"²µ¹¼½¾")) return true;
  // √[±∂†≠®™´≤≥¥µø]   ≈[°¢]   (MacRoman)
  if (a == U'√' && one_of(b, U"±∂†≠®™´≤≥¥µø")) return true;
  if (a == U'≈' && (b == U'°' || b == U'¢')) return true;
  // ‚Ä[ìîïòôúùû†°¢π]   ‚[âó][àä°ê]
  if (a == U'‚' && b == U'Ä' && have_c && one_of(c, U"ìîïòôúùû†°¢π")) return true;
  if (a == U'‚' && (b == U'â' || b == U'ó') && have_c && one_of(c, U"àä°ê")) return true;
  // вЂ   (windows-1251)
  if (a == U'в' && b == U'Ђ') return true;
  // [ВГРС][c1 bad start_punctuation end_punctuation currency °µ][ВГРС]
  if (one_of(a, U"ВГРС") && ((B & (kC1 | kBad | kStart | kEnd | kCur)) || b == U'°' || b == U'µ') && have_c &&
      one_of(c, U"ВГРС"))
    return true;
  // ГўВЂВ.[A-Za-z ]   ('.' is anything but a newline)
  if (a == U'Г' && b == U'ў' && c == U'В' && t.at(i + 3) == U'Ђ' && t.at(i + 4) == U'В' && i + 6 < t.size() &&
      t.at(i + 5) != U'\n' && (is_ascii_letter(t.at(i + 6)) || t.at(i + 6) == U' '))
    return true;
  // Ã[\xa0¡]
  if (a == U'Ã' && (b == 0xA0 || b == U'¡')) return true;
  // [a-z]\s?[ÃÂ][ ]
  if (is_lower_ascii(a)) {
    if ((b == U'Ã' || b == U'Â') && c == U' ' && have_c) return true;
    if (is_py_space(b) && (c == U'Ã' || c == U'Â') && t.at(i + 3) == U' ' && i + 3 < t.size()) return true;
  }
  // ^[ÃÂ][ ]
  if (i == 0 && (a == U'Ã' || a == U'Â') && b == U' ') return true;
  // [a-z.,?!{end_punctuation}] Â [ {start_punctuation}{end_punctuation}]
  if ((is_lower_ascii(a) || one_of(a, U".,?!") || (A & kEnd)) && b == U'Â' && have_c &&
      (c == U' ' || (C & (kStart | kEnd))))
    return true;
  // β€[™\xa0Ά\xad®°]   (windows-1253)
  if (a == U'β' && b == U'€' && have_c && one_of(c, U"™\u00a0Ά\u00ad®°")) return true;
  // [ΒΓΞΟ][c1 bad start_punctuation end_punctuation currency °][ΒΓΞΟ]
  if (one_of(a, U"ΒΓΞΟ") && ((B & (kC1 | kBad | kStart | kEnd | kCur)) || b == U'°') && have_c && one_of(c, U"ΒΓΞΟ"))
    return true;
  // ā€   (windows-1257)
  if (a == U'ā' && b == U'€') return true;
  return false;
}

bool is_bad_text(const std::u32string& text) {
  const Classified t(text);
  for (size_t i = 0; i < t.size(); ++i)
    if (bad_at(t, i)) return true;
  return false;
}

// ---- single-byte encodings -----------------------------------------------------------------------------------

// The inverse of each kCharmaps table: code point -> byte, for the bytes that do not stand for the code point
// of the same number.
const std::vector<std::unordered_map<char32_t, uint8_t>>& charmap_encoders() {
  static const auto* enc = [] {
    auto* e = new std::vector<std::unordered_map<char32_t, uint8_t>>(kNumCharmaps);
    for (size_t k = 0; k < kNumCharmaps; ++k)
      for (int b = 0; b < 256; ++b)
        if (kCharmaps[k].chars[b] != static_cast<char32_t>(b)) (*e)[k].emplace(kCharmaps[k].chars[b], b);
    return e;
  }();
  return *enc;
}

// chardata.possible_encoding followed by str.encode: false when some character has no byte in encoding k.
// The sloppy encodings give U+001A no byte (their byte 1A means U+FFFD), as ftfy's regex does.
bool encode_single_byte(const std::u32string& text, size_t k, std::string& out) {
  const auto& inverse = charmap_encoders()[k];
  out.clear();
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x100 && kCharmaps[k].chars[c] == c) {  // bytes that stand for their own code point
      out.push_back(static_cast<char>(c));
      continue;
    }
    auto it = inverse.find(c);
    if (it == inverse.end()) return false;
    out.push_back(static_cast<char>(it->second));
  }
  return true;
}

bool is_ascii(const std::u32string& text) {
  for (char32_t c : text)
    if (c >= 0x80) return false;
  return true;
}

// ---- byte-level repairs ---------------------------------------------------------------------------------------

inline uint8_t byte_at(const std::string& s, size_t i) {
  return i < s.size() ? static_cast<uint8_t>(s[i]) : 0;
}
inline bool in(uint8_t b, uint8_t lo, uint8_t hi) {
  return b >= lo && b <= hi;
}

// chardata.ALTERED_UTF8_RE at position i: a UTF-8 sequence whose A0 byte became a space. Returns the length
// of the match (0: none). The pattern, alternatives in order:
//   [\xc2\xc3\xc5\xce\xd0\xd9][ ]
//   | [\xe2\xe3][ ][\x80-\x84\x86-\x9f\xa1-\xbf]
//   | [\xe0-\xe3][\x80-\x84\x86-\x9f\xa1-\xbf][ ]
//   | [\xf0][ ][\x80-\xbf][\x80-\xbf] | [\xf0][\x80-\xbf][ ][\x80-\xbf] | [\xf0][\x80-\xbf][\x80-\xbf][ ]
size_t altered_utf8_at(const std::string& s, size_t i) {
  const uint8_t a = byte_at(s, i), b = byte_at(s, i + 1), c = byte_at(s, i + 2), d = byte_at(s, i + 3);
  const size_t n = s.size();
  auto cont_not_85_a0 = [](uint8_t x) { return in(x, 0x80, 0x84) || in(x, 0x86, 0x9F) || in(x, 0xA1, 0xBF); };
  auto cont = [](uint8_t x) { return in(x, 0x80, 0xBF); };
  if ((a == 0xC2 || a == 0xC3 || a == 0xC5 || a == 0xCE || a == 0xD0 || a == 0xD9) && i + 1 < n && b == ' ') return 2;
  if ((a == 0xE2 || a == 0xE3) && i + 2 < n && b == ' ' && cont_not_85_a0(c)) return 3;
  if (in(a, 0xE0, 0xE3) && i + 2 < n && cont_not_85_a0(b) && c == ' ') return 3;
  if (a == 0xF0 && i + 3 < n) {
    if (b == ' ' && cont(c) && cont(d)) return 4;
    if (cont(b) && c == ' ' && cont(d)) return 4;
    if (cont(b) && cont(c) && d == ' ') return 4;
  }
  return 0;
}

bool altered_utf8_search(const std::string& s) {
  for (size_t i = 0; i < s.size(); ++i)
    if (altered_utf8_at(s, i)) return true;
  return false;
}

// fixes.restore_byte_a0. First "\xc3 " (Ã and a space) becomes "\xc3\xa0 " unless followed by another space
// or by "quele", "quela", "quilo" or "s " (the Portuguese à-words, which attach to what follows), keeping
// the space as a word break; then every ALTERED_UTF8_RE match gets its spaces back as A0 bytes.
std::string restore_byte_a0(const std::string& in_bytes) {
  std::string s;
  s.reserve(in_bytes.size() + 8);
  for (size_t i = 0; i < in_bytes.size(); ++i) {
    if (byte_at(in_bytes, i) == 0xC3 && i + 1 < in_bytes.size() && in_bytes[i + 1] == ' ') {
      const std::string rest = in_bytes.substr(i + 2, 5);
      const bool excepted = rest.compare(0, 1, " ") == 0 || rest.compare(0, 5, "quele") == 0 ||
                            rest.compare(0, 5, "quela") == 0 || rest.compare(0, 5, "quilo") == 0 ||
                            rest.compare(0, 2, "s ") == 0;
      if (!excepted) {
        s += "\xc3\xa0 ";
        ++i;
        continue;
      }
    }
    s.push_back(in_bytes[i]);
  }
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = altered_utf8_at(s, i);
    if (len == 0) {
      out.push_back(s[i++]);
      continue;
    }
    for (size_t k = i; k < i + len; ++k) out.push_back(s[k] == ' ' ? '\xa0' : s[k]);
    i += len;
  }
  return out;
}

// chardata.LOSSY_UTF8_RE at position i: a UTF-8 sequence some of whose bytes were lost, shown as byte 1A
// (what the sloppy codecs make of U+FFFD) or, once per sequence, as '?'. Returns the match length (0: none).
// Alternatives in order:
//   [\xc2-\xdf][\x1a] | [\xc2-\xc3][?]
//   | \xed[\xa0-\xaf][\x1a?]\xed[\xb0-\xbf][\x1a?\x80-\xbf] | \xed[\xa0-\xaf][\x1a?\x80-\xbf]\xed[\xb0-\xbf][\x1a?]
//   | [\xe0-\xef][\x1a?][\x1a\x80-\xbf] | [\xe0-\xef][\x1a\x80-\xbf][\x1a?]
//   | [\xf0-\xf4][\x1a?][\x1a\x80-\xbf][\x1a\x80-\xbf] | [\xf0-\xf4][\x1a\x80-\xbf][\x1a?][\x1a\x80-\xbf]
//   | [\xf0-\xf4][\x1a\x80-\xbf][\x1a\x80-\xbf][\x1a?] | \x1a
size_t lossy_utf8_at(const std::string& s, size_t i) {
  const size_t n = s.size();
  auto b = [&](size_t k) { return byte_at(s, i + k); };
  auto have = [&](size_t len) { return i + len <= n; };
  auto lost = [](uint8_t x) { return x == 0x1A || x == '?'; };
  auto lost_or_cont = [](uint8_t x) { return x == 0x1A || x == '?' || in(x, 0x80, 0xBF); };
  auto sub_or_cont = [](uint8_t x) { return x == 0x1A || in(x, 0x80, 0xBF); };
  const uint8_t a = b(0);
  if (have(2) && in(a, 0xC2, 0xDF) && b(1) == 0x1A) return 2;
  if (have(2) && in(a, 0xC2, 0xC3) && b(1) == '?') return 2;
  if (have(6) && a == 0xED && in(b(1), 0xA0, 0xAF) && b(3) == 0xED && in(b(4), 0xB0, 0xBF)) {
    if (lost(b(2)) && lost_or_cont(b(5))) return 6;
    if (lost_or_cont(b(2)) && lost(b(5))) return 6;
  }
  if (have(3) && in(a, 0xE0, 0xEF)) {
    if (lost(b(1)) && sub_or_cont(b(2))) return 3;
    if (sub_or_cont(b(1)) && lost(b(2))) return 3;
  }
  if (have(4) && in(a, 0xF0, 0xF4)) {
    if (lost(b(1)) && sub_or_cont(b(2)) && sub_or_cont(b(3))) return 4;
    if (sub_or_cont(b(1)) && lost(b(2)) && sub_or_cont(b(3))) return 4;
    if (sub_or_cont(b(1)) && sub_or_cont(b(2)) && lost(b(3))) return 4;
  }
  if (a == 0x1A) return 1;
  return 0;
}

// fixes.replace_lossy_sequences: each such sequence becomes the UTF-8 of U+FFFD.
std::string replace_lossy_sequences(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = lossy_utf8_at(s, i);
    if (len == 0) {
      out.push_back(s[i++]);
      continue;
    }
    out += "\xef\xbf\xbd";
    i += len;
  }
  return out;
}

// bytes.decode("utf-8-variants"), strict: Python's UTF-8 decoder, plus what ftfy's variant codec adds —
// C0 80 as U+0000 (Java's null) and CESU-8 (a surrogate pair written as two 3-byte sequences). Without byte
// C0 or ED in the input this is plain strict UTF-8, which is what ftfy uses then. False: the bytes do not
// decode (ftfy's UnicodeDecodeError), `out` is then unspecified.
//
// Two quirks of the codec come from its patterns' '$', which also matches before a final "\n": "\xc0\n" at
// the very end decodes as U+0000 and takes the newline with it, and a CESU-8 pair whose sixth and last byte
// is "\n" is taken as a pair. They are reproduced because they decide whether a decode succeeds.
bool decode_utf8_variants(const std::string& s, std::u32string& out) {
  out.clear();
  out.reserve(s.size());
  const size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    const uint8_t a = byte_at(s, i);
    if (a < 0x80) {
      out.push_back(a);
      ++i;
      continue;
    }
    if (a == 0xC0) {
      if (i + 1 < n && (byte_at(s, i + 1) == 0x80 || (byte_at(s, i + 1) == '\n' && i + 2 == n))) {
        out.push_back(0);
        i += 2;
        continue;
      }
      return false;
    }
    if (a == 0xED && !(i + 1 < n && in(byte_at(s, i + 1), 0x80, 0x9F))) {
      // A surrogate: only a whole CESU-8 pair decodes.
      const uint8_t b1 = byte_at(s, i + 1), b2 = byte_at(s, i + 2), b3 = byte_at(s, i + 3), b4 = byte_at(s, i + 4),
                    b5 = byte_at(s, i + 5);
      if (i + 6 <= n && in(b1, 0xA0, 0xAF) && in(b2, 0x80, 0xBF) && b3 == 0xED && in(b4, 0xB0, 0xBF) &&
          (in(b5, 0x80, 0xBF) || (b5 == '\n' && i + 6 == n))) {
        out.push_back(0x10000 + ((b1 & 0x0F) << 16) + ((b2 & 0x3F) << 10) + ((b4 & 0x0F) << 6) + (b5 & 0x3F));
        i += 6;
        continue;
      }
      return false;
    }
    // Strict UTF-8: shortest forms only, no surrogates, nothing past U+10FFFF.
    int extra;
    char32_t cp;
    uint8_t lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
    if (in(a, 0xC2, 0xDF)) {
      extra = 1;
      cp = a & 0x1F;
    } else if (in(a, 0xE0, 0xEF)) {
      extra = 2;
      cp = a & 0x0F;
      if (a == 0xE0) lo = 0xA0;
      if (a == 0xED) hi = 0x9F;
    } else if (in(a, 0xF0, 0xF4)) {
      extra = 3;
      cp = a & 0x07;
      if (a == 0xF0) lo = 0x90;
      if (a == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (i + extra >= n) return false;  // the sequence runs past the end
    for (int k = 1; k <= extra; ++k) {
      const uint8_t c = byte_at(s, i + k);
      if (k == 1 ? !in(c, lo, hi) : !in(c, 0x80, 0xBF)) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return true;
}

// ---- text-level repairs ---------------------------------------------------------------------------------------

// chardata.UTF8_DETECTOR_RE at position i: runs of characters that look like UTF-8 sequences read in a
// single-byte encoding, not preceded by a strict continuation character:
//   (?<![utf8_continuation_strict]) ( [first_of_2][continuation] | [first_of_3][continuation]{2}
//                                     | [first_of_4][continuation]{3} )+
// With nothing after the repetition, Python's engine takes the first alternative that fits at each step
// and stops at the first step where none does. Returns the match length (0: none).
size_t utf8_detector_at(const Classified& t, size_t i) {
  if (i > 0 && t.has(i - 1, kClassUtf8ContinuationStrict)) return 0;
  const uint32_t cont = kClassUtf8Continuation;
  size_t p = i;
  while (p < t.size()) {
    const uint32_t c = t.cls(p);
    if ((c & kClassUtf8FirstOf2) && t.has(p + 1, cont)) {
      p += 2;
    } else if ((c & kClassUtf8FirstOf3) && t.has(p + 1, cont) && t.has(p + 2, cont)) {
      p += 3;
    } else if ((c & kClassUtf8FirstOf4) && t.has(p + 1, cont) && t.has(p + 2, cont) && t.has(p + 3, cont)) {
      p += 4;
    } else {
      break;
    }
  }
  return p - i;
}

std::u32string fix_encoding_full(const std::u32string& text);

// fixes.decode_inconsistent_utf8: each UTF-8-looking run that is shorter than the whole text and looks bad by
// itself is fixed on its own.
std::u32string decode_inconsistent_utf8(const std::u32string& text, const Classified& t) {
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const size_t len = utf8_detector_at(t, i);
    if (len == 0) {
      out.push_back(text[i++]);
      continue;
    }
    const std::u32string piece = text.substr(i, len);
    if (len < text.size() && is_bad_text(piece))
      out += fix_encoding_full(piece);
    else
      out += piece;
    i += len;
  }
  return out;
}

// fixes.fix_c1_controls: U+0080..U+009F read as windows-1252 (sloppily: its five undefined bytes stay).
std::u32string fix_c1_controls(std::u32string text) {
  for (char32_t& c : text)
    if (c >= 0x80 && c <= 0x9F) c = kCharmaps[kSloppy1252].chars[c];
  return text;
}

bool has_c1(const std::u32string& text) {
  for (char32_t c : text)
    if (c >= 0x80 && c <= 0x9F) return true;
  return false;
}

// One step of ftfy's _fix_encoding_one_step_and_explain.
std::u32string fix_encoding_step(const std::u32string& text) {
  if (text.empty() || is_ascii(text) || !is_bad_text(text)) return text;
  bool latin1_possible = false;
  std::string bytes;
  std::u32string decoded;
  for (size_t k = 0; k < kNumCharmaps; ++k) {
    if (!encode_single_byte(text, k, bytes)) continue;
    if (k == kLatin1) latin1_possible = true;
    // Put back A0 bytes that became spaces (not for MacRoman, where it would take an en dash and a space).
    if (k != kMacRoman && altered_utf8_search(bytes)) bytes = restore_byte_a0(bytes);
    if (kCharmaps[k].sloppy) bytes = replace_lossy_sequences(bytes);
    if (decode_utf8_variants(bytes, decoded)) return decoded;
  }
  {
    const Classified t(text);
    bool detected = false;
    for (size_t i = 0; i < text.size() && !detected; ++i) detected = utf8_detector_at(t, i) > 0;
    if (detected) {
      std::u32string fixed = decode_inconsistent_utf8(text, t);
      if (fixed != text) return fixed;
    }
  }
  // Latin-1 text whose C1 controls were meant as windows-1252 (ftfy's test for "also windows-1252" compares
  // against a name its list never holds, so it never returns early here). Python's strict windows-1252 has
  // no character for bytes 81 8D 8F 90 9D: then the decode fails and this step is skipped.
  if (latin1_possible) {
    bool ok = true;
    std::u32string fixed = text;
    for (char32_t& c : fixed) {
      if (c >= 0x80 && c <= 0x9F) {
        if (c == 0x81 || c == 0x8D || c == 0x8F || c == 0x90 || c == 0x9D) {
          ok = false;
          break;
        }
        c = kCharmaps[kSloppy1252].chars[c];
      }
    }
    if (ok && fixed != text) return fixed;
  }
  if (has_c1(text)) return fix_c1_controls(text);
  return text;
}

// ftfy.fix_encoding: steps until nothing changes.
std::u32string fix_encoding_full(const std::u32string& text) {
  std::u32string cur = text;
  while (true) {
    std::u32string next = fix_encoding_step(cur);
    if (next == cur) return cur;
    cur = std::move(next);
  }
}

}  // namespace

bool is_bad(const std::u32string& text) {
  return is_bad_text(text);
}
std::u32string fix_encoding(const std::u32string& text) {
  return fix_encoding_full(text);
}
bool has_c1_controls(const std::u32string& text) {
  return has_c1(text);
}
std::u32string fix_c1_controls_1252(const std::u32string& text) {
  return fix_c1_controls(text);
}

}  // namespace omni::text::ftfy
