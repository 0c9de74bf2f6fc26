// UTF-8 to code points and back, and Python's notion of whitespace: what text code needs to treat a prompt
// as Python's str does (pipeline/prompt_encoding.h).
#pragma once

#include <string>

namespace omni {

// Decodes UTF-8 into code points; a malformed sequence becomes U+FFFD (Python would have refused the bytes
// when the prompt was read, so any consistent choice does).
std::u32string utf8_decode(const std::string& s);
void utf8_append(std::string& out, char32_t cp);
std::string utf8_encode(const std::u32string& s);
// Python's str.isspace() (which is also what `\s` and str.strip() use for str patterns).
bool is_py_space(char32_t c);

}  // namespace omni
