#include "text/html_unescape.h"

#include <cstdint>

#include "text/utf8.h"

namespace omni::text {
namespace {

struct EntityRow {
  const char* name;
  char32_t first;
  char32_t second;  // 0: the reference stands for one code point
};

constexpr EntityRow kHtml5Entities[] = {
#include "text/html5_entities.inc"
};

// HTML5 maps numeric references to these numbers to other characters (mostly the windows-1252 reading of
// the C1 range, which is what such references meant in practice).
bool replaced_charref(uint64_t num, char32_t* out) {
  static constexpr char32_t kC1[32] = {
      0x20AC, 0x81,   0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
      0x2039, 0x0152, 0x8D,   0x017D, 0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
      0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D,   0x017E, 0x0178,
  };
  if (num == 0) {
    *out = 0xFFFD;
    return true;
  }
  if (num == 0x0D) {
    *out = 0x0D;
    return true;
  }
  if (num >= 0x80 && num <= 0x9F) {
    *out = kC1[num - 0x80];
    return true;
  }
  return false;
}

// Numbers a reference may name but which HTML5 drops (controls other than whitespace, noncharacters).
bool dropped_codepoint(uint64_t n) {
  return (n >= 0x1 && n <= 0x8) || n == 0xB || (n >= 0xE && n <= 0x1F) || (n >= 0x7F && n <= 0x9F) ||
         (n >= 0xFDD0 && n <= 0xFDEF) || (n <= 0x10FFFF && (n & 0xFFFE) == 0xFFFE);
}

bool is_digit(char32_t c) {
  return c >= '0' && c <= '9';
}
bool is_hex(char32_t c) {
  return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// One reference at s[i] == '&', as Python's pattern
//   &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
// and its replacement function see it. Returns how many characters it consumed (0: no reference here, the
// '&' is literal) and appends what they become.
size_t replace_reference(const std::u32string& s, size_t i, std::u32string& out) {
  const size_t n = s.size();
  const size_t j = i + 1;
  if (j < n && s[j] == '#') {
    const bool hex = j + 1 < n && (s[j + 1] == 'x' || s[j + 1] == 'X');
    size_t k = hex ? j + 2 : j + 1;
    const size_t digits = k;
    uint64_t num = 0;
    while (k < n && (hex ? is_hex(s[k]) : is_digit(s[k]))) {
      const char32_t c = s[k];
      const uint64_t d = is_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
      // Python's int() has no limit; past U+10FFFF the exact value no longer matters, so saturate there.
      if (num <= 0x10FFFF) num = num * (hex ? 16 : 10) + d;
      ++k;
    }
    if (k == digits) return 0;  // "&#" or "&#x" with no digits after it is no reference
    if (k < n && s[k] == ';') ++k;
    char32_t rep;
    if (replaced_charref(num, &rep)) {
      out.push_back(rep);
    } else if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) {
      out.push_back(0xFFFD);
    } else if (!dropped_codepoint(num)) {
      out.push_back(static_cast<char32_t>(num));
    }
    return k - i;
  }
  // A name: 1 to 32 characters other than \t \n \f space < & # ;, then an optional ';'.
  size_t k = j;
  while (k < n && k - j < 32) {
    const char32_t c = s[k];
    if (c == '\t' || c == '\n' || c == '\f' || c == ' ' || c == '<' || c == '&' || c == '#' || c == ';') break;
    ++k;
  }
  if (k == j) return 0;
  if (k < n && s[k] == ';') ++k;
  const std::u32string name = s.substr(j, k - j);
  const auto& table = html5_entities();
  auto it = table.find(name);
  if (it != table.end()) {
    out += it->second;
    return k - i;
  }
  // The longest proper prefix (of at least two characters) that is a name by itself; only the legacy names,
  // which need no ';', can match this way.
  for (size_t len = name.size() - 1; len >= 2 && len < name.size(); --len) {
    auto p = table.find(name.substr(0, len));
    if (p != table.end()) {
      out += p->second;
      out.append(name, len, std::u32string::npos);
      return k - i;
    }
  }
  out.push_back('&');
  out += name;
  return k - i;
}

}  // namespace

const std::unordered_map<std::u32string, std::u32string>& html5_entities() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::u32string, std::u32string>();
    t->reserve(sizeof(kHtml5Entities) / sizeof(kHtml5Entities[0]));
    for (const auto& row : kHtml5Entities) {
      std::u32string name;
      for (const char* p = row.name; *p; ++p) name.push_back(static_cast<unsigned char>(*p));
      std::u32string value(1, row.first);
      if (row.second != 0) value.push_back(row.second);
      t->emplace(std::move(name), std::move(value));
    }
    return t;
  }();
  return *table;
}

std::u32string html_unescape(const std::u32string& s) {
  if (s.find(U'&') == std::u32string::npos) return s;
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    if (s[i] == '&') {
      const size_t used = replace_reference(s, i, out);
      if (used > 0) {
        i += used;
        continue;
      }
    }
    out.push_back(s[i]);
    ++i;
  }
  return out;
}

std::string html_unescape(const std::string& text) {
  if (text.find('&') == std::string::npos) return text;
  return utf8_encode(html_unescape(utf8_decode(text)));
}

}  // namespace omni::text
