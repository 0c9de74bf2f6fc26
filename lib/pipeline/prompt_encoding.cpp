#include "pipeline/prompt_encoding.h"

#include <cstdint>
#include <string>

#include "core/error.h"
#include "core/tensor_dump.h"
#include "models/umt5_encoder.h"
#include "text/fix_text.h"
#include "text/html_unescape.h"
#include "text/umt5_tokenizer.h"
#include "text/utf8.h"

namespace omni::pipeline {
namespace {

std::u32string strip32(const std::u32string& s) {
  size_t b = 0, e = s.size();
  while (b < e && text::is_py_space(s[b])) ++b;
  while (e > b && text::is_py_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::string clean_prompt(const std::string& prompt) {
  // basic_clean: ftfy.fix_text(text), then html.unescape(html.unescape(text)).strip()
  std::u32string s = strip32(text::html_unescape(text::html_unescape(text::fix_text(text::utf8_decode(prompt)))));
  // whitespace_clean: re.sub(r"\s+", " ", text).strip(), with the `regex` module, whose \s is str.isspace()
  // less U+001C..U+001F; fix_text has removed those, so is_py_space serves for both.
  std::u32string folded;
  folded.reserve(s.size());
  bool in_space = false;
  for (char32_t c : s) {
    if (text::is_py_space(c)) {
      if (!in_space) folded.push_back(' ');
      in_space = true;
    } else {
      folded.push_back(c);
      in_space = false;
    }
  }
  return text::utf8_encode(strip32(folded));
}

PromptText describe_prompt(const text::Umt5Tokenizer& tokenizer, const std::string& prompt,
                           int64_t max_sequence_length) {
  PromptText out;
  out.given = prompt;
  out.cleaned = clean_prompt(prompt);
  out.ids = tokenizer.encode(out.cleaned);
  out.tokens = static_cast<int64_t>(out.ids.size()) + 1;  // + eos
  out.truncated = out.tokens > max_sequence_length;
  return out;
}

at::Tensor encode_prompts(const text::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<std::string>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device, models::UnitHooks* hooks) {
  std::vector<PromptText> described;
  described.reserve(prompts.size());
  for (const auto& p : prompts) described.push_back(describe_prompt(tokenizer, p, max_sequence_length));
  return encode_prompts(tokenizer, encoder, described, max_sequence_length, dtype, device, hooks);
}

at::Tensor encode_prompts(const text::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<PromptText>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device, models::UnitHooks* hooks) {
  std::vector<std::vector<int64_t>> token_ids;
  token_ids.reserve(prompts.size());
  for (const auto& p : prompts) token_ids.push_back(p.ids);
  const auto tokens = tokenizer.batch(token_ids, max_sequence_length);
  // Added tokens (<extra_id_N>, a bos new to the vocabulary) can lie past a small encoder's embedding table.
  const int64_t max_id = tokens.input_ids.max().item<int64_t>();
  OMNI_CHECK_INPUT(max_id < encoder.config().vocab_size, tokenizer.path(), ": a prompt tokenizes to id ", max_id,
                   ", past the text encoder's vocabulary of ", encoder.config().vocab_size,
                   " (an added special token such as <extra_id_N> written in the prompt?)");
  auto ids = tokens.input_ids.to(device);                     // [B, L]
  auto mask = tokens.attention_mask.to(device);               // [B, L]
  auto hidden = encoder.forward(ids, mask, hooks).to(dtype);  // [B, L, D]
  debug::dump("input_ids", ids);
  debug::dump("attention_mask", mask);
  debug::dump("last_hidden_state", hidden);
  // diffusers keeps u[:len] and pads with zeros back to max_sequence_length; a select does the same exactly.
  auto lengths = mask.gt(0).sum(1, /*keepdim=*/true);  // [B, 1]
  auto positions = at::arange(max_sequence_length, at::TensorOptions().dtype(at::kLong).device(device));
  auto keep = (positions.unsqueeze(0) < lengths).unsqueeze(-1);     // [B, L, 1]
  return at::where(keep, hidden, at::zeros({}, hidden.options()));  // [B, L, D]
}

}  // namespace omni::pipeline
