// UTF-8 to code points and back, and Python's notion of whitespace: what text code needs to treat a prompt
// as Python's str does (pipeline/prompt_encoding.h).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace omni::text {

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
// Why `s` is not strict UTF-8, in a user's words, or "" when it is: the byte offset of the first ill-formed
// sequence and its bytes ("byte 5: 0xC3 0x28 is not a UTF-8 sequence"). Text inputs (flags, prompts files,
// JSON Lines, YAML configs) are checked with it where they are read, before any model file is opened.
std::string utf8_problem(std::string_view s);
// A text file's bytes that are UTF-16 or UTF-32 rather than UTF-8 (what some Windows editors save): by their
// byte-order mark, or, without one, by the NUL bytes of ASCII text in those encodings. The encoding's name
// ("UTF-16LE with a byte-order mark"), or "" when the bytes do not look like either.
std::string utf16_or_32_encoding(std::string_view bytes);
// The one-line error for a text file `path` that is not UTF-8, or "" when it is: UTF-16/32 named with the
// iconv command that converts it; else the line (1-based) and the byte offset in it of the first ill-formed
// sequence. `what` starts the message ("--prompts-file p.txt").
std::string text_file_problem(std::string_view bytes, const std::string& path, const std::string& what);
// The code point of the well-formed sequence at s[i]; `len` gets its length.
char32_t utf8_decode_at(std::string_view s, size_t i, size_t* len);
// The code point ending at byte `end` (exclusive) of well-formed UTF-8.
char32_t utf8_decode_before(std::string_view s, size_t end);
// Code points in well-formed UTF-8.
size_t utf8_count(std::string_view s);

// Python's str.isspace() (which is also what `\s` and str.strip() use for str patterns).
bool is_py_space(char32_t c);

}  // namespace omni::text
