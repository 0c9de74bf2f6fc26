// ftfy.fix_text (ftfy 6.3.1, default TextFixerConfig), reimplemented: what diffusers' Wan pipelines run on
// every prompt before html.unescape (pipeline/prompt_encoding.h). The output must be exactly ftfy's, code
// point for code point; tests/text/fix_text_check.py compares the two on a corpus.
//
// What it does, per line (ftfy's segments), repeated until a pass changes nothing:
//   - HTML entities (ftfy's own rule: only names ending in ';', plus all-caps forms such as &EACUTE;),
//     unless the text has a literal '<' (from that line on, as ftfy's "auto" does);
//   - mojibake repair: text that looks like UTF-8 read as latin-1, windows-1252/1251/1250/1253/1254/1257,
//     iso-8859-2, MacRoman or cp437 is re-encoded and decoded as UTF-8, judged by ftfy's badness heuristic;
//     mixed fragments and stray C1 controls are fixed on their own;
//   - C1 controls as windows-1252, Latin ligatures taken apart, full-width ASCII and half-width katakana to
//     their usual width, curly quotes straightened, line breaks to "\n", surrogates, terminal escapes and
//     invisible control characters removed, NFC.
// Not reproduced: the explanations (fix_and_explain's plans) and every non-default configuration.
#pragma once

#include <string>

namespace omni::text {

// `utf8` must be UTF-8 (a malformed byte is read as U+FFFD, see text/utf8.h).
std::string fix_text(const std::string& utf8);
std::u32string fix_text(const std::u32string& text);

// A piece of fix_text that tests compare with ftfy's function of the same name (the mojibake repair's are in
// text/fix_encoding.h).
namespace ftfy_detail {
std::u32string unescape_html(const std::u32string& text);  // ftfy.fixes.unescape_html
}  // namespace ftfy_detail

}  // namespace omni::text
