// The UMT5 tokenizer against the fixtures' ids and masks (HF T5TokenizerFast output), and the pipeline's
// prompt cleaning against diffusers' prompt_clean (ftfy.fix_text, html.unescape twice, str.strip,
// re.sub(r"\s+", " ")) as it behaves on these texts; tests/e2e/text/text_corpus.sh checks thousands more.
#include "text/umt5_tokenizer.h"

#include <gtest/gtest.h>

#include <fstream>
#include <vector>

#include "pipeline/prompt_encoding.h"
#include "text/html_unescape.h"
#include "text_test_util.h"

namespace omni::text {
namespace {

using omni::pipeline::clean_prompt;
using omni::text::html_unescape;
using namespace text_testing;  // fixture paths and tensors, expect_error, TempDir

std::vector<int64_t> json_ids(const nlohmann::json& j) {
  return j.get<std::vector<int64_t>>();
}

std::vector<int64_t> row(const at::Tensor& t, int64_t b) {
  auto r = t[b].contiguous();
  return std::vector<int64_t>(r.data_ptr<int64_t>(), r.data_ptr<int64_t>() + r.numel());
}

// --- fixtures -------------------------------------------------------------------------------------------

TEST(Umt5Tokenizer, PlainSentencePieceIdsMatchCaseJson) {
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const auto cj = case_json(name);
    const auto tok = Umt5Tokenizer::from_dir(tokenizer_dir(name));
    EXPECT_EQ(tok.encode(clean_prompt(cj["prompt"].get<std::string>())), json_ids(cj["sentencepiece_ids"]["prompt"]));
    EXPECT_EQ(tok.encode(clean_prompt(cj["negative_prompt"].get<std::string>())),
              json_ids(cj["sentencepiece_ids"]["negative"]));
  }
}

TEST(Umt5Tokenizer, PaddedIdsAndMasksEqualFixtures) {
  int truncated_cases = 0;
  for (const char* name : kCases) {
    SCOPED_TRACE(name);
    const auto cj = case_json(name);
    const int64_t max_len = cj["max_sequence_length"].get<int64_t>();
    const auto tok = Umt5Tokenizer::from_dir(tokenizer_dir(name));
    const std::vector<std::string> texts = {clean_prompt(cj["prompt"].get<std::string>()),
                                            clean_prompt(cj["negative_prompt"].get<std::string>())};
    const auto out = tok(texts, max_len);
    ASSERT_EQ(out.input_ids.sizes(), (std::vector<int64_t>{2, max_len}));
    ASSERT_EQ(out.attention_mask.sizes(), (std::vector<int64_t>{2, max_len}));
    EXPECT_EQ(out.input_ids.scalar_type(), at::kLong);
    const auto exp_ids = expected(name, "prompt.input_ids");
    const auto exp_mask = expected(name, "prompt.attention_mask");
    const auto neg_ids = expected(name, "negative.input_ids");
    const auto neg_mask = expected(name, "negative.attention_mask");
    EXPECT_EQ(row(out.input_ids, 0), row(exp_ids, 0));
    EXPECT_EQ(row(out.attention_mask, 0), row(exp_mask, 0));
    EXPECT_EQ(row(out.input_ids, 1), row(neg_ids, 0));
    EXPECT_EQ(row(out.attention_mask, 1), row(neg_mask, 0));
    EXPECT_EQ(out.lengths[0], exp_mask.sum().item<int64_t>());
    EXPECT_EQ(out.lengths[1], neg_mask.sum().item<int64_t>());
    // Truncation keeps eos as the last id.
    if (static_cast<int64_t>(json_ids(cj["sentencepiece_ids"]["prompt"]).size()) > max_len - 1) {
      ++truncated_cases;
      EXPECT_EQ(out.lengths[0], max_len);
      EXPECT_EQ(out.input_ids[0][max_len - 1].item<int64_t>(), 1);
    }
  }
  EXPECT_EQ(truncated_cases, 1) << "the t2v fixture's prompt is the truncated one";
}

// --- HF conventions beyond plain SentencePiece -------------------------------------------------------------

TEST(Umt5Tokenizer, SpecialTokensInTextBecomeTheirIds) {
  const auto tok = Umt5Tokenizer::from_dir(tokenizer_dir("t2v-a14b-tiny"));
  const auto a = tok.encode("red fox");
  const auto b = tok.encode("snow");
  std::vector<int64_t> want = a;
  want.push_back(1);
  want.insert(want.end(), b.begin(), b.end());
  EXPECT_EQ(tok.encode("red fox</s>snow"), want);
  EXPECT_EQ(tok.encode("red fox </s> snow"), want);
  EXPECT_EQ(tok.encode("</s>"), (std::vector<int64_t>{1}));
  EXPECT_EQ(tok.encode("<pad><unk>"), (std::vector<int64_t>{0, 2}));
  // Not a special token: spelled out by SentencePiece, never a single id.
  EXPECT_GT(tok.encode("</s").size(), 1u);
}

TEST(Umt5Tokenizer, EmptyPromptIsJustEosAndShortLimitsKeepEos) {
  const auto tok = Umt5Tokenizer::from_dir(tokenizer_dir("t2v-a14b-tiny"));
  const auto out = tok({""}, 5);
  EXPECT_EQ(row(out.input_ids, 0), (std::vector<int64_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(row(out.attention_mask, 0), (std::vector<int64_t>{1, 0, 0, 0, 0}));
  EXPECT_EQ(tok.encode_with_eos("red fox runs", 1), (std::vector<int64_t>{1}));
  const auto full = tok.encode("red fox runs through the snow");
  ASSERT_GT(full.size(), 3u);
  const auto cut = tok.encode_with_eos("red fox runs through the snow", 4);
  EXPECT_EQ(cut, (std::vector<int64_t>{full[0], full[1], full[2], 1}));
  expect_error([&] { tok.encode_with_eos("x", 0); }, ExitCode::kUsage, {"max_sequence_length"});
}

TEST(Umt5Tokenizer, MissingOrBadModelIsAnInputErrorNamingTheFile) {
  text_testing::TempDir dir;
  expect_error([&] { Umt5Tokenizer::from_dir(dir / "tokenizer"); }, ExitCode::kInput,
               {dir / "tokenizer/spiece.model", "not found"});
  const std::string garbage = dir / "spiece.model";
  std::ofstream(garbage) << "this is not a sentencepiece model";
  expect_error([&] { Umt5Tokenizer tok(garbage); }, ExitCode::kInput, {garbage, "cannot load"});
  expect_error([&] { Umt5Tokenizer tok(dir / ""); }, ExitCode::kInput, {"directory"});
  // A tokenizer_config.json that names another tokenizer class.
  ASSERT_EQ(std::system(("cp '" + tokenizer_dir("t2v-a14b-tiny") + "/spiece.model' '" + (dir / "") + "'").c_str()), 0);
  std::ofstream(dir / "tokenizer_config.json") << R"({"tokenizer_class": "LlamaTokenizer"})";
  expect_error([&] { Umt5Tokenizer::from_dir(dir / ""); }, ExitCode::kInput,
               {"tokenizer_config.json", "LlamaTokenizer"});
}

// --- prompt cleaning ---------------------------------------------------------------------------------------

TEST(PromptClean, FixturePromptsAreUnchanged) {
  for (const char* name : kCases) {
    const auto cj = case_json(name);
    EXPECT_EQ(clean_prompt(cj["prompt"].get<std::string>()), cj["prompt"].get<std::string>());
  }
}

// What diffusers' prompt_clean does to text that needs it: html.unescape twice, then every run of whitespace
// folded to one space and the ends stripped.
TEST(PromptClean, UnescapesTwiceAndFoldsWhitespace) {
  EXPECT_EQ(clean_prompt("  A  cat\t\tplaying\n piano  "), "A cat playing piano");
  EXPECT_EQ(clean_prompt("fish &amp; chips"), "fish & chips");
  EXPECT_EQ(clean_prompt("a &amp;lt;b&amp;gt; c"), "a <b> c");  // unescaped twice
  EXPECT_EQ(clean_prompt("x&nbsp;&nbsp;y"), "x y");             // U+00A0 is whitespace to Python's \s
}

TEST(PromptClean, HtmlUnescapeNamedAndNumeric) {
  EXPECT_EQ(html_unescape("a &amp; b &lt;c&gt; &quot;d&quot; &apos;e&apos;"), "a & b <c> \"d\" 'e'");
  EXPECT_EQ(html_unescape("&#65;&#x42;&#X43;&#68"), "ABCD");
  EXPECT_EQ(html_unescape("caf&eacute; &copy; &euro;&mdash;&hellip; &alpha;&Omega;"),
            "caf\xC3\xA9 \xC2\xA9 \xE2\x82\xAC\xE2\x80\x94\xE2\x80\xA6 \xCE\xB1\xCE\xA9");
  // HTML5 legacy names work without ';' and by longest prefix; others need it and stay literal otherwise.
  EXPECT_EQ(html_unescape("&amp &ampx &eacutex"), "& &x \xC3\xA9x");
  EXPECT_EQ(html_unescape("&notit; &notin;"), "\xC2\xACit; \xE2\x88\x89");
  EXPECT_EQ(html_unescape("&hellip &bogus; & &; &# &#x;"), "&hellip &bogus; & &; &# &#x;");
  // Numeric special cases: cp1252 for 0x80-0x9F, U+FFFD for 0 / surrogates / out of range, noncharacters dropped.
  EXPECT_EQ(html_unescape("&#x80;&#150;"), "\xE2\x82\xAC\xE2\x80\x93");
  EXPECT_EQ(html_unescape("&#0;|&#xD800;|&#x110000;|&#99999999999999999999;"),
            "\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD");
  EXPECT_EQ(html_unescape("a&#1;b&#xFFFE;c"), "abc");
  EXPECT_EQ(html_unescape("no references"), "no references");
}

TEST(PromptClean, TwiceUnescapedStrippedAndWhitespaceFolded) {
  EXPECT_EQ(clean_prompt("&amp;lt;b&amp;gt; bold"), "<b> bold");  // unescaped twice
  // ftfy.fix_text first decodes entities until none is left (the text has no '<'), then html.unescape twice.
  EXPECT_EQ(clean_prompt("&amp;amp;lt;"), "<");
  EXPECT_EQ(clean_prompt("  a\t\tred \n\n fox\r\n"), "a red fox");
  EXPECT_EQ(clean_prompt("&nbsp;cat&nbsp;&nbsp;dog&#32;"), "cat dog");  // NBSP is whitespace to Python
  EXPECT_EQ(clean_prompt("a\xE3\x80\x80"
                         "b\xE2\x80\x83"
                         "c"),
            "a b c");  // U+3000, U+2003
  EXPECT_EQ(clean_prompt("   "), "");
  EXPECT_EQ(clean_prompt("caf\xC3\xA9  au lait"), "caf\xC3\xA9 au lait");  // other UTF-8 untouched
}

}  // namespace
}  // namespace omni::text
