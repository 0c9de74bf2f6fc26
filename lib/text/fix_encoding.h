// ftfy's mojibake repair (ftfy 6.3.1): text that was UTF-8 read as latin-1, windows-1252/1251/1250/1253/1254/1257,
// iso-8859-2, MacRoman or cp437 is encoded back and decoded as UTF-8 when ftfy's badness heuristic says it looks
// wrong; mixed fragments and stray C1 controls are fixed on their own. text/fix_text.h runs it as ftfy.fix_text
// does; tests/text/fix_text_check.py compares each function with ftfy's of the same name.
#pragma once

#include <string>

namespace omni::text::ftfy {

// ftfy.badness.is_bad: whether the text holds a sequence that is more likely mojibake than meant.
bool is_bad(const std::u32string& text);
// ftfy.fix_encoding: repair steps until one changes nothing.
std::u32string fix_encoding(const std::u32string& text);
// Whether the text has a C1 control (U+0080..U+009F), and fixes.fix_c1_controls: each read as windows-1252
// (sloppily: its five undefined bytes stay).
bool has_c1_controls(const std::u32string& text);
std::u32string fix_c1_controls_1252(const std::u32string& text);

}  // namespace omni::text::ftfy
