// UTF-8 to code points and back, and Python's notion of whitespace: what text code needs to treat a prompt
// as Python's str does (pipeline/prompt_encoding.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace omni {

// Decodes UTF-8 into code points; a malformed sequence becomes U+FFFD (Python would have refused the bytes
// when the prompt was read, so any consistent choice does).
std::u32string utf8_decode(const std::string& s);
void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(const std::u32string& s);
// Strict UTF-8, the set a Python str or a Rust &str can hold (no overlong forms, surrogates or code points past
// U+10FFFF): the length (1 to 4) of the well-formed sequence at s[i], or 0 when it is ill-formed or truncated.
size_t utf8_sequence_length(std::string_view s, size_t i);
// The offset of the first ill-formed byte, or npos.
size_t utf8_invalid_at(std::string_view s);
// The code point of the well-formed sequence at s[i]; `len` gets its length.
char32_t utf8_decode_at(std::string_view s, size_t i, size_t* len);
// The code point ending at byte `end` (exclusive) of well-formed UTF-8.
char32_t utf8_decode_before(std::string_view s, size_t end);
// Code points in well-formed UTF-8.
size_t utf8_count(std::string_view s);

// Python's str.isspace() (which is also what `\s` and str.strip() use for str patterns).
bool is_py_space(char32_t c);

}  // namespace omni
