// text/utf8.h's checks of text inputs: what a user is told about bytes that are not UTF-8 (issue 39).
#include "text/utf8.h"

#include <gtest/gtest.h>

#include <string>

namespace {

using omni::text::text_file_problem;
using omni::text::utf16_or_32_encoding;
using omni::text::utf8_problem;

// s encoded as UTF-16 or UTF-32 code units of ASCII, in the given byte order.
std::string wide(const std::string& s, int unit, bool little, bool bom) {
  std::string out;
  auto put = [&](unsigned v) {
    for (int i = 0; i < unit; ++i) {
      const int shift = little ? 8 * i : 8 * (unit - 1 - i);
      out.push_back(static_cast<char>((v >> shift) & 0xFF));
    }
  };
  if (bom) put(0xFEFF);
  for (unsigned char c : s) put(c);
  return out;
}

TEST(Utf8Problem, WellFormedTextHasNone) {
  for (const std::string s : {"", "a cat", "猫がピアノを弾く", "emoji 🐈", "ü café"}) {
    EXPECT_EQ(utf8_problem(s), "") << s;
  }
  EXPECT_EQ(utf8_problem(std::string("NUL\0byte", 8)), "");
}

TEST(Utf8Problem, NamesTheByteOffsetAndTheBytes) {
  // The issue's --prompt: 0xC3 starts a two-byte sequence, 0x28 '(' cannot continue it.
  EXPECT_EQ(utf8_problem("bad \xc3\x28 utf8"), "byte 4: 0xC3 is not a UTF-8 sequence");
  EXPECT_EQ(utf8_problem("a cat\xff\xfe"), "byte 5: 0xFF is not a UTF-8 sequence");
  // Latin-1 'é' alone; a sequence cut by the end of the text; an overlong '/'; a CESU-8 surrogate half; past U+10FFFF.
  EXPECT_EQ(utf8_problem("caf\xe9"), "byte 3: 0xE9 is a UTF-8 sequence cut short");
  EXPECT_EQ(utf8_problem("x\xe7\x8c"), "byte 1: 0xE7 0x8C is a UTF-8 sequence cut short");
  EXPECT_EQ(utf8_problem("\xc0\xaf"), "byte 0: 0xC0 0xAF is not a UTF-8 sequence");
  EXPECT_EQ(utf8_problem("ab\xed\xa0\x80"), "byte 2: 0xED 0xA0 0x80 is not a UTF-8 sequence");
  EXPECT_EQ(utf8_problem("\xf4\x90\x80\x80"), "byte 0: 0xF4 0x90 0x80 0x80 is not a UTF-8 sequence");
}

TEST(Utf16Or32, ByMarkOrByNulPattern) {
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat", 2, true, true)), "UTF-16LE with a byte-order mark");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat", 2, false, true)), "UTF-16BE with a byte-order mark");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat", 4, true, true)), "UTF-32LE with a byte-order mark");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat", 4, false, true)), "UTF-32BE with a byte-order mark");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat playing piano", 2, true, false)), "UTF-16LE (no byte-order mark)");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat playing piano", 2, false, false)), "UTF-16BE (no byte-order mark)");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat playing piano", 4, true, false)), "UTF-32LE (no byte-order mark)");
  EXPECT_EQ(utf16_or_32_encoding(wide("a cat playing piano", 4, false, false)), "UTF-32BE (no byte-order mark)");
  // UTF-8 text, with its own mark or a stray NUL, is neither.
  EXPECT_EQ(utf16_or_32_encoding("\xEF\xBB\xBF"
                                 "a cat\nA dog\n"),
            "");
  EXPECT_EQ(utf16_or_32_encoding(std::string("a cat\0 on a mat, playing", 24)), "");
  EXPECT_EQ(utf16_or_32_encoding("ab"), "");
}

TEST(TextFileProblem, LineAndOffsetOrTheConversion) {
  EXPECT_EQ(text_file_problem("a cat\nA dog\n", "p.txt", "--prompts-file p.txt"), "");
  EXPECT_EQ(text_file_problem("a cat\nA dog\xff bad\nthird\n", "p.txt", "--prompts-file p.txt"),
            "--prompts-file p.txt line 2: not UTF-8 at byte 5: 0xFF is not a UTF-8 sequence (save the file as "
            "UTF-8, or convert it with: iconv -f LATIN1 -t UTF-8 if it is Latin-1)");
  EXPECT_EQ(text_file_problem("\xff"
                              "first\n",
                              "p.txt", "--prompts-file p.txt")
                .substr(0, 49),
            "--prompts-file p.txt line 1: not UTF-8 at byte 0:");
  EXPECT_EQ(text_file_problem(wide("a cat\n", 2, true, true), "my prompts.txt", "--prompts-file my prompts.txt"),
            "--prompts-file my prompts.txt: the file is UTF-16LE with a byte-order mark, not UTF-8; convert it "
            "with: iconv -f UTF-16 -t UTF-8 'my prompts.txt' > converted.txt");
  EXPECT_EQ(text_file_problem(wide("a cat playing piano\n", 2, false, false), "p.txt", "--config p.txt"),
            "--config p.txt: the file is UTF-16BE (no byte-order mark), not UTF-8; convert it with: iconv -f "
            "UTF-16BE -t UTF-8 'p.txt' > converted.txt");
}

}  // namespace
