#include "io/image_metadata.h"

#include <cstdlib>
#include <cstring>
#include <regex>
#include <string_view>

// stb_image's zlib inflate (its implementation is compiled in image_reader.cpp): PNG's zTXt and compressed iTXt.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include <stb_image.h>
#pragma GCC diagnostic pop

namespace omni::io {
namespace {

uint32_t read_u16(const uint8_t* p, bool little) {
  return little ? (p[0] | (p[1] << 8)) : ((p[0] << 8) | p[1]);
}

uint32_t read_u32(const uint8_t* p, bool little) {
  return little ? (uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24))
                : ((uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]});
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

// zlib stream -> bytes; empty on a corrupt stream (Pillow then drops the text too).
std::string inflate(std::string_view compressed) {
  if (compressed.empty() || compressed.size() > static_cast<size_t>(INT32_MAX)) return {};
  int out_len = 0;
  char* out = stbi_zlib_decode_malloc(compressed.data(), static_cast<int>(compressed.size()), &out_len);
  if (out == nullptr) return {};
  std::string text(out, static_cast<size_t>(out_len));
  std::free(out);
  return text;
}

// ImageMagick's "Raw profile type exif" text: "\nexif\n    <length>\n<hex, in lines>"; Pillow drops the first three
// lines and reads the rest as hex (bytes.fromhex: whitespace between bytes allowed).
std::string raw_profile_bytes(std::string_view text) {
  size_t pos = 0;
  for (int line = 0; line < 3; ++line) {
    pos = text.find('\n', pos);
    if (pos == std::string_view::npos) return {};
    ++pos;
  }
  std::string hex;
  for (size_t i = pos; i < text.size(); ++i)
    if (text[i] != '\n') hex += text[i];
  std::string out;
  auto nibble = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size();) {
    if (hex[i] == ' ' || hex[i] == '\t' || hex[i] == '\r' || hex[i] == '\v' || hex[i] == '\f') {
      ++i;
      continue;
    }
    if (i + 1 >= hex.size()) return {};  // Pillow: ValueError, and the image does not load at all
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out += static_cast<char>((hi << 4) | lo);
    i += 2;
  }
  return out;
}

}  // namespace

ImageMetadata jpeg_metadata(const uint8_t* data, size_t size) {
  ImageMetadata m;
  if (size < 4 || data[0] != 0xFF || data[1] != 0xD8) return m;  // not a JPEG
  size_t pos = 2;
  while (pos + 4 <= size) {
    if (data[pos] != 0xFF) return m;
    const uint8_t marker = data[pos + 1];
    if (marker == 0xFF) {  // fill byte
      ++pos;
      continue;
    }
    if (marker == 0xD9 || marker == 0xDA) return m;  // end of image / start of scan: Pillow stops reading markers
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) {  // markers without a length
      pos += 2;
      continue;
    }
    const size_t len = (size_t{data[pos + 2]} << 8) | data[pos + 3];  // includes the 2 length bytes
    if (len < 2 || pos + 2 + len > size) return m;
    const std::string_view body(reinterpret_cast<const char*>(data + pos + 4), len - 2);
    if (marker == 0xE1) {
      // Pillow keeps the first Exif segment (later ones are appended after it: IFD0 stays the first's) and the
      // last XMP one.
      if (starts_with(body, std::string_view("Exif\0\0", 6))) {
        if (m.exif.empty()) m.exif = std::string(body);
      } else if (starts_with(body, std::string_view("http://ns.adobe.com/xap/1.0/\0", 29))) {
        m.xmp = std::string(body.substr(29));
      }
    }
    pos += 2 + len;
  }
  return m;
}

bool is_png(const uint8_t* data, size_t size) {
  static const uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  return size >= 8 && std::memcmp(data, kSignature, 8) == 0;
}

ImageMetadata png_metadata(const uint8_t* data, size_t size) {
  ImageMetadata m;
  if (!is_png(data, size)) return m;
  std::string raw_profile;  // "Raw profile type exif": used only when no eXIf / "exif" text is there
  // Chunks in file order, the ones after IDAT included (Pillow reads those when it loads the pixels, into the same
  // info dictionary); a later chunk of the same kind replaces an earlier one, as in that dictionary.
  size_t pos = 8;
  while (pos + 12 <= size) {
    const size_t len = read_u32(data + pos, false);
    if (len > size - pos - 12) break;
    const std::string_view type(reinterpret_cast<const char*>(data + pos + 4), 4);
    const std::string_view body(reinterpret_cast<const char*>(data + pos + 8), len);
    pos += 12 + len;
    if (type == "IEND") break;
    if (type == "eXIf") {
      m.exif = "Exif" + std::string("\0\0", 2) + std::string(body);
      continue;
    }
    if (type != "tEXt" && type != "zTXt" && type != "iTXt") continue;
    const size_t nul = body.find('\0');
    if (nul == std::string_view::npos || nul == 0) continue;
    const std::string_view key = body.substr(0, nul);
    std::string_view rest = body.substr(nul + 1);
    std::string value;
    if (type == "tEXt") {
      value = std::string(rest);
    } else if (type == "zTXt") {
      if (!rest.empty() && rest[0] != 0) continue;  // unknown compression: Pillow refuses the file
      value = rest.empty() ? std::string() : inflate(rest.substr(1));
    } else {  // iTXt: compression flag, method, language\0, translated keyword\0, text
      if (rest.size() < 2) continue;
      const bool compressed = rest[0] != 0;
      const bool zlib = rest[1] == 0;
      rest = rest.substr(2);
      const size_t lang_end = rest.find('\0');
      if (lang_end == std::string_view::npos) continue;
      const size_t tk_end = rest.find('\0', lang_end + 1);
      if (tk_end == std::string_view::npos) continue;
      rest = rest.substr(tk_end + 1);
      if (compressed && !zlib) continue;
      value = compressed ? inflate(rest) : std::string(rest);
    }
    if (key == "exif" && type == "tEXt") {
      m.exif = value;  // Pillow keeps a tEXt "exif" value as the raw EXIF bytes
    } else if (key == "Raw profile type exif") {
      raw_profile = value;
    } else if (key == "XML:com.adobe.xmp") {
      m.xmp = value;
    }
  }
  if (m.exif.empty() && !raw_profile.empty()) m.exif = raw_profile_bytes(raw_profile);
  return m;
}

std::optional<int> exif_orientation(const std::string& exif) {
  std::string_view t(exif);
  while (starts_with(t, std::string_view("Exif\0\0", 6))) t.remove_prefix(6);
  const auto* p = reinterpret_cast<const uint8_t*>(t.data());
  const size_t n = t.size();
  if (n < 8) return std::nullopt;
  bool little;
  if (p[0] == 'I' && p[1] == 'I') {
    little = true;
  } else if (p[0] == 'M' && p[1] == 'M') {
    little = false;
  } else {
    return std::nullopt;
  }
  if (read_u16(p + 2, little) != 42) return std::nullopt;
  const uint32_t ifd = read_u32(p + 4, little);
  if (ifd > n || n - ifd < 2) return std::nullopt;
  const uint32_t entries = read_u16(p + ifd, little);
  for (uint32_t i = 0; i < entries; ++i) {
    const size_t e = ifd + 2 + static_cast<size_t>(i) * 12;
    if (e + 12 > n) return std::nullopt;
    if (read_u16(p + e, little) != 0x0112) continue;
    const uint32_t type = read_u16(p + e + 2, little), count = read_u32(p + e + 4, little);
    // One SHORT or LONG sits in the entry's value field. Anything else Pillow reads as a tuple or bytes, which
    // exif_transpose's table does not hold: no transpose.
    if (count != 1) return 0;
    if (type == 3) return static_cast<int>(read_u16(p + e + 8, little));
    if (type == 4) return static_cast<int>(read_u32(p + e + 8, little) & 0x7FFFFFFF);
    return 0;
  }
  return std::nullopt;
}

int image_orientation(const ImageMetadata& metadata) {
  if (const std::optional<int> o = exif_orientation(metadata.exif)) return *o;
  if (metadata.xmp.empty()) return 1;
  static const std::regex kXmpOrientation("tiff:Orientation(=\"|>)([0-9])");
  std::smatch match;
  if (std::regex_search(metadata.xmp, match, kXmpOrientation)) return match[2].str()[0] - '0';
  return 1;
}

}  // namespace omni::io
