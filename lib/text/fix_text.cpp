// ftfy.fix_text with the default configuration; see fix_text.h for the contract. The mojibake repair is
// text/fix_encoding; the width map comes from ftfy through fix_text_tables.inc (text/ftfy_tables.h); ICU supplies
// NFC and the properties behind \d and str.upper (for ftfy's all-caps entities).

#include "text/fix_text.h"

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "text/fix_encoding.h"
#include "text/ftfy_tables.h"
#include "text/html_unescape.h"
#include "text/utf8.h"

namespace omni::text {
namespace {

using ftfy::kWidthMap;
using ftfy::WidthPair;

constexpr size_t kMaxDecodeLength = 1000000;  // TextFixerConfig.max_decode_length

bool is_ascii_letter(char32_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Python's \d for str patterns: a decimal digit of any script.
bool is_py_decimal(char32_t c) {
  return u_charType(static_cast<UChar32>(c)) == U_DECIMAL_DIGIT_NUMBER;
}

// ---- HTML entities, ftfy's way ----------------------------------------------------------------------------------

// chardata.HTML_ENTITIES: "&name;" for every html5 name with a ';', and for the all-lowercase names also the
// all-caps spelling (value upper-cased as str.upper does), where that spelling is no reference by itself.
const std::unordered_map<std::u32string, std::u32string>& ftfy_entities() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::u32string, std::u32string>();
    for (const auto& [name, value] : html5_entities()) {
      if (name.empty() || name.back() != ';') continue;
      (*t)[U"&" + name] = value;
    }
    for (const auto& [name, value] : html5_entities()) {
      if (name.empty() || name.back() != ';') continue;
      bool lower = true;
      for (char32_t c : name) lower = lower && !(c >= 'A' && c <= 'Z');
      if (!lower) continue;
      std::u32string upper = U"&" + name;
      for (char32_t& c : upper)
        if (c >= 'a' && c <= 'z') c -= 0x20;
      if (html_unescape(upper) != upper) continue;
      // Full upper-casing (ß -> SS), as Python's str.upper.
      icu::UnicodeString u = icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(value.data()),
                                                           static_cast<int32_t>(value.size()));
      u.toUpper(icu::Locale::getRoot());
      std::u32string up(static_cast<size_t>(u.countChar32()), 0);
      UErrorCode status = U_ZERO_ERROR;
      u.toUTF32(reinterpret_cast<UChar32*>(up.data()), static_cast<int32_t>(up.size()), status);
      (*t)[upper] = up;
    }
    return t;
  }();
  return *table;
}

bool is_ascii_alnum(char32_t c) {
  return is_ascii_letter(c) || (c >= '0' && c <= '9');
}

// fixes.unescape_html: each match of &#?[0-9A-Za-z]{1,24}; that names an entry of HTML_ENTITIES is replaced;
// a numeric one is decoded as html.unescape decodes it, unless that leaves a ';' behind (a partial decode,
// or a reference to ';' itself).
std::u32string unescape_html_ftfy(const std::u32string& text) {
  if (text.find(U'&') == std::u32string::npos) return text;
  const auto& entities = ftfy_entities();
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  const size_t n = text.size();
  while (i < n) {
    if (text[i] == '&') {
      size_t k = i + 1;
      if (k < n && text[k] == '#') ++k;
      const size_t start = k;
      while (k < n && is_ascii_alnum(text[k])) ++k;
      const size_t len = k - start;
      if (len >= 1 && len <= 24 && k < n && text[k] == ';') {
        const std::u32string match = text.substr(i, k + 1 - i);
        auto it = entities.find(match);
        if (it != entities.end()) {
          out += it->second;
        } else if (match[1] == '#') {
          std::u32string decoded = html_unescape(match);
          out += decoded.find(U';') == std::u32string::npos ? decoded : match;
        } else {
          out += match;
        }
        i = k + 1;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  return out;
}

// ---- the simple fixers ------------------------------------------------------------------------------------------

// fixes.fix_latin_ligatures (chardata.LIGATURES): Latin typographic ligatures and the legacy digraphs.
void fix_latin_ligatures(std::u32string& text) {
  struct Lig {
    char32_t from;
    const char32_t* to;
  };
  static constexpr Lig kLigatures[] = {
      {U'Ĳ', U"IJ"},  {U'ĳ', U"ij"},  {U'ŉ', U"ʼn"}, {U'Ǳ', U"DZ"}, {U'ǲ', U"Dz"}, {U'ǳ', U"dz"},
      {U'Ǆ', U"DŽ"},  {U'ǅ', U"Dž"},  {U'ǆ', U"dž"}, {U'Ǉ', U"LJ"}, {U'ǈ', U"Lj"}, {U'ǉ', U"lj"},
      {U'Ǌ', U"NJ"},  {U'ǋ', U"Nj"},  {U'ǌ', U"nj"}, {U'ﬀ', U"ff"}, {U'ﬁ', U"fi"}, {U'ﬂ', U"fl"},
      {U'ﬃ', U"ffi"}, {U'ﬄ', U"ffl"}, {U'ﬅ', U"ſt"}, {U'ﬆ', U"st"},
  };
  auto find = [](char32_t c) -> const char32_t* {
    if (!((c >= 0x132 && c <= 0x1F3) || (c >= 0xFB00 && c <= 0xFB06))) return nullptr;
    for (const auto& l : kLigatures)
      if (l.from == c) return l.to;
    return nullptr;
  };
  bool any = false;
  for (char32_t c : text) any = any || find(c) != nullptr;
  if (!any) return;
  std::u32string out;
  out.reserve(text.size() + 8);
  for (char32_t c : text) {
    if (const char32_t* rep = find(c))
      out += rep;
    else
      out.push_back(c);
  }
  text.swap(out);
}

// fixes.fix_character_width (chardata.WIDTH_MAP): U+3000 and the half-/full-width forms U+FF01..U+FFEF.
void fix_character_width(std::u32string& text) {
  auto find = [](char32_t c) -> const WidthPair* {
    if (c != 0x3000 && !(c >= 0xFF01 && c <= 0xFFEF)) return nullptr;
    const auto* end = std::end(kWidthMap);
    const auto* it =
        std::lower_bound(std::begin(kWidthMap), end, c, [](const WidthPair& p, char32_t v) { return p.from < v; });
    return it != end && it->from == c ? it : nullptr;
  };
  bool any = false;
  for (char32_t c : text) any = any || find(c) != nullptr;
  if (!any) return;
  std::u32string out;
  out.reserve(text.size() + 4);
  for (char32_t c : text) {
    if (const WidthPair* p = find(c)) {
      out.push_back(p->to);
      if (p->to2) out.push_back(p->to2);
    } else {
      out.push_back(c);
    }
  }
  text.swap(out);
}

// fixes.uncurl_quotes: [\u02bc\u2018-\u201b] -> ', [\u201c-\u201f] -> ".
void uncurl_quotes(std::u32string& text) {
  for (char32_t& c : text) {
    if (c == 0x02BC || (c >= 0x2018 && c <= 0x201B))
      c = '\'';
    else if (c >= 0x201C && c <= 0x201F)
      c = '"';
  }
}

// fixes.fix_line_breaks: CRLF, CR, U+2028, U+2029 and U+0085 all become "\n".
void fix_line_breaks(std::u32string& text) {
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c == '\r') {
      out.push_back('\n');
      if (i + 1 < text.size() && text[i + 1] == '\n') ++i;
    } else if (c == 0x2028 || c == 0x2029 || c == 0x85) {
      out.push_back('\n');
    } else {
      out.push_back(c);
    }
  }
  text.swap(out);
}

// fixes.fix_surrogates: a high/low surrogate pair becomes its character, a lone surrogate U+FFFD. Text that
// came from UTF-8 holds none; kept so that fix_text(u32string) is ftfy's for any input.
void fix_surrogates(std::u32string& text) {
  bool any = false;
  for (char32_t c : text) any = any || (c >= 0xD800 && c <= 0xDFFF);
  if (!any) return;
  std::u32string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char32_t c = text[i];
    if (c >= 0xD800 && c <= 0xDBFF && i + 1 < text.size() && text[i + 1] >= 0xDC00 && text[i + 1] <= 0xDFFF) {
      out.push_back(0x10000 + (c - 0xD800) * 0x400 + (text[i + 1] - 0xDC00));
      ++i;
    } else if (c >= 0xD800 && c <= 0xDFFF) {
      out.push_back(0xFFFD);
    } else {
      out.push_back(c);
    }
  }
  text.swap(out);
}

// fixes.remove_terminal_escapes: \033\[((?:\d|;)*)([a-zA-Z]) is removed (\d: any decimal digit).
void remove_terminal_escapes(std::u32string& text) {
  if (text.find(U'\x1b') == std::u32string::npos) return;
  std::u32string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == 0x1B && i + 1 < text.size() && text[i + 1] == '[') {
      size_t k = i + 2;
      while (k < text.size() && (text[k] == ';' || is_py_decimal(text[k]))) ++k;
      if (k < text.size() && is_ascii_letter(text[k])) {
        i = k + 1;
        continue;
      }
    }
    out.push_back(text[i++]);
  }
  text.swap(out);
}

// fixes.remove_control_chars (chardata.CONTROL_CHARS): C0 controls other than \t \n \f \r, DEL, the
// deprecated Arabic format controls U+206A..U+206F, the BOM U+FEFF and U+FFF9..U+FFFC.
bool is_removed_control(char32_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
         c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
}
void remove_control_chars(std::u32string& text) {
  text.erase(std::remove_if(text.begin(), text.end(), is_removed_control), text.end());
}

// unicodedata.normalize("NFC", text). Text below U+0300 has no combining marks and nothing that NFC
// changes, which covers most prompts without a round trip through UTF-16.
void normalize_nfc(std::u32string& text) {
  bool simple = true;
  for (char32_t c : text) simple = simple && c < 0x300;
  if (simple) return;
  UErrorCode status = U_ZERO_ERROR;
  static const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  if (nfc == nullptr) std::abort();
  const icu::UnicodeString in =
      icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(text.data()), static_cast<int32_t>(text.size()));
  status = U_ZERO_ERROR;
  if (nfc->isNormalized(in, status) && U_SUCCESS(status)) return;
  status = U_ZERO_ERROR;
  const icu::UnicodeString out = nfc->normalize(in, status);
  if (U_FAILURE(status)) std::abort();
  std::u32string result(static_cast<size_t>(out.countChar32()), 0);
  status = U_ZERO_ERROR;
  out.toUTF32(reinterpret_cast<UChar32*>(result.data()), static_cast<int32_t>(result.size()), status);
  text.swap(result);
}

// ftfy.fix_and_explain on one segment: all fixes in ftfy's order, repeated until a pass changes nothing.
std::u32string fix_segment(std::u32string text, bool unescape) {
  while (true) {
    const std::u32string before = text;
    if (unescape) text = unescape_html_ftfy(text);
    text = ftfy::fix_encoding(text);
    if (ftfy::has_c1_controls(text)) text = ftfy::fix_c1_controls_1252(text);
    fix_latin_ligatures(text);
    fix_character_width(text);
    uncurl_quotes(text);
    fix_line_breaks(text);
    fix_surrogates(text);
    remove_terminal_escapes(text);
    remove_control_chars(text);
    normalize_nfc(text);
    if (text == before) return text;
  }
}

}  // namespace

namespace ftfy_detail {
std::u32string unescape_html(const std::u32string& text) {
  return unescape_html_ftfy(text);
}
}  // namespace ftfy_detail

std::u32string fix_text(const std::u32string& text) {
  // ftfy fixes each line (up to and including its "\n") on its own, in pieces of at most max_decode_length
  // code points. HTML entities are decoded until the first line that holds a literal '<' (then the text is
  // taken for HTML, whose entities are meant); from that line on they are left alone.
  std::u32string out;
  out.reserve(text.size());
  bool unescape = true;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t nl = text.find(U'\n', pos);
    size_t end = nl == std::u32string::npos ? text.size() : nl + 1;
    if (end - pos > kMaxDecodeLength) end = pos + kMaxDecodeLength;
    std::u32string segment = text.substr(pos, end - pos);
    if (unescape && segment.find(U'<') != std::u32string::npos) unescape = false;
    out += fix_segment(std::move(segment), unescape);
    pos = end;
  }
  return out;
}

std::string fix_text(const std::string& utf8) {
  return utf8_encode(fix_text(utf8_decode(utf8)));
}

}  // namespace omni::text
