// The data of the ftfy reimplementation (text/fix_text, text/fix_encoding): the record types and the tables
// tools/unicode/ftfy_tables.py generates from ftfy into fix_text_tables.inc. Internal to those two files.
#pragma once

#include <cstdint>

namespace omni::text::ftfy {
namespace {  // each including file keeps its own copy of what it uses (the unused tables cost nothing)

struct ClassRange {
  char32_t first;
  char32_t last;
  uint32_t bits;
};
struct Charmap {
  const char* name;
  bool sloppy;  // undefined bytes pass through as the C1 code point of the same number; byte 1A is U+FFFD
  char32_t chars[256];
};
struct WidthPair {
  char32_t from;
  char32_t to;
  char32_t to2;  // 0, or the second code point of a two-character replacement
};

#include "text/fix_text_tables.inc"

}  // namespace
}  // namespace omni::text::ftfy
