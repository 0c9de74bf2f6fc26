#include "text/utf8.h"

#include <algorithm>
#include <cstdio>

namespace omni::text {

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra = 0;
    char32_t cp = 0;
    if (c < 0x80) {
      cp = c;
    } else if ((c & 0xE0) == 0xC0) {
      cp = c & 0x1F;
      extra = 1;
    } else if ((c & 0xF0) == 0xE0) {
      cp = c & 0x0F;
      extra = 2;
    } else if ((c & 0xF8) == 0xF0) {
      cp = c & 0x07;
      extra = 3;
    } else {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    bool ok = i + static_cast<size_t>(extra) < s.size();  // the continuation bytes are all there
    for (int k = 1; ok && k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80)
        ok = false;
      else
        cp = (cp << 6) | (cc & 0x3F);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
      continue;
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) utf8_append(out, cp);
  return out;
}

size_t utf8_sequence_length(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b0 = byte(i);
  const size_t n = s.size();
  if (b0 < 0x80) return 1;
  const auto cont = [&](size_t k) { return k < n && (byte(k) & 0xC0) == 0x80; };
  if (b0 >= 0xC2 && b0 <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    const unsigned char b1 = byte(i + 1);
    if (b0 == 0xE0 && b1 < 0xA0) return 0;   // overlong
    if (b0 == 0xED && b1 >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    const unsigned char b1 = byte(i + 1);
    if (b0 == 0xF0 && b1 < 0x90) return 0;   // overlong
    if (b0 == 0xF4 && b1 >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

size_t utf8_invalid_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const size_t len = utf8_sequence_length(s, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string::npos;
}

std::string utf8_problem(std::string_view s) {
  const size_t at = utf8_invalid_at(s);
  if (at == std::string::npos) return "";
  // The bytes of the ill-formed sequence: its lead byte and the continuation bytes that follow it (at most 3),
  // which is what a reader needs to recognise Latin-1 (one byte), CESU-8 surrogates (0xED 0xA0..) or a cut.
  size_t end = at + 1;
  while (end < s.size() && end < at + 4 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) ++end;
  std::string bytes;
  for (size_t i = at; i < end; ++i) {
    char hex[8];
    std::snprintf(hex, sizeof(hex), "%s0x%02X", i == at ? "" : " ", static_cast<unsigned char>(s[i]));
    bytes += hex;
  }
  std::string why = "is not a UTF-8 sequence";
  if (end == s.size() && utf8_sequence_length(std::string(s.substr(at)) + "\x80\x80\x80", 0) != 0)
    why = "is a UTF-8 sequence cut short";
  return "byte " + std::to_string(at) + ": " + bytes + " " + why;
}

std::string utf16_or_32_encoding(std::string_view b) {
  const auto at = [&](size_t i) { return static_cast<unsigned char>(b[i]); };
  const bool bom32le = b.size() >= 4 && at(0) == 0xFF && at(1) == 0xFE && at(2) == 0 && at(3) == 0;
  const bool bom32be = b.size() >= 4 && at(0) == 0 && at(1) == 0 && at(2) == 0xFE && at(3) == 0xFF;
  if (bom32le) return "UTF-32LE with a byte-order mark";
  if (bom32be) return "UTF-32BE with a byte-order mark";
  if (b.size() >= 2 && at(0) == 0xFF && at(1) == 0xFE) return "UTF-16LE with a byte-order mark";
  if (b.size() >= 2 && at(0) == 0xFE && at(1) == 0xFF) return "UTF-16BE with a byte-order mark";
  // Without a mark: ASCII text in UTF-16/32 has a NUL beside (or three beside) every letter. A stray NUL in
  // UTF-8 text does not make that pattern over the first bytes.
  const size_t n = std::min<size_t>(b.size(), 64);
  if (n < 4) return "";
  size_t nul_at[4] = {0, 0, 0, 0}, nuls = 0;
  for (size_t i = 0; i < n; ++i) {
    if (at(i) == 0) {
      ++nul_at[i % 4];
      ++nuls;
    }
  }
  const size_t quarter = n / 4;
  if (nuls * 4 >= n * 3 && (nul_at[3] == 0 || nul_at[0] == 0)) {
    return nul_at[0] == 0 ? "UTF-32LE (no byte-order mark)" : "UTF-32BE (no byte-order mark)";
  }
  const size_t even = nul_at[0] + nul_at[2], odd = nul_at[1] + nul_at[3];
  if (odd >= 2 * quarter - 1 && even == 0) return "UTF-16LE (no byte-order mark)";
  if (even >= 2 * quarter - 1 && odd == 0) return "UTF-16BE (no byte-order mark)";
  return "";
}

std::string text_file_problem(std::string_view bytes, const std::string& path, const std::string& what) {
  const std::string wide = utf16_or_32_encoding(bytes);
  if (!wide.empty()) {
    // With a byte-order mark, iconv's "UTF-16" / "UTF-32" read it and drop it; without one, name the order.
    const bool bom = wide.find("with a byte-order mark") != std::string::npos;
    const std::string from = wide.substr(0, bom ? 6 : wide.find(' '));  // UTF-16, UTF-32LE, ...
    return what + ": the file is " + wide + ", not UTF-8; convert it with: iconv -f " + from + " -t UTF-8 '" + path +
           "' > converted.txt";
  }
  const size_t bad = utf8_invalid_at(bytes);
  if (bad == std::string::npos) return "";
  const size_t line_start = bad == 0 ? 0 : bytes.rfind('\n', bad - 1) + 1;  // npos + 1 == 0
  size_t line = 1;
  for (size_t i = 0; i < line_start; ++i) line += bytes[i] == '\n';
  const size_t line_end = std::min(bytes.find('\n', bad), bytes.size());
  const std::string problem = utf8_problem(bytes.substr(line_start, line_end - line_start));
  return what + " line " + std::to_string(line) + ": not UTF-8 at " + problem +
         " (save the file as UTF-8, or convert it with: iconv -f LATIN1 -t UTF-8 if it is Latin-1)";
}

char32_t utf8_decode_at(std::string_view s, size_t i, size_t* len) {
  const auto b = [&](size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  const char32_t b0 = b(0);
  *len = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : 4;
  switch (*len) {
    case 1:
      return b0;
    case 2:
      return ((b0 & 0x1F) << 6) | (b(1) & 0x3F);
    case 3:
      return ((b0 & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    default:
      return ((b0 & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
  }
}

char32_t utf8_decode_before(std::string_view s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  size_t len = 0;
  return utf8_decode_at(s, b, &len);
}

size_t utf8_count(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) ++n;
  return n;
}

bool is_py_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace omni::text
