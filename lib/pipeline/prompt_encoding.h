// The prompt's way to the text encoder, as diffusers' Wan pipelines take it: prompt_clean (ftfy, html
// unescape, whitespace) and _get_t5_prompt_embeds (tokenize, encode, zero past each prompt's length).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/module.h"

namespace omni::text {
class Umt5Tokenizer;
}  // namespace omni::text
namespace omni::models {
class Umt5Encoder;
}  // namespace omni::models

namespace omni::pipeline {

// diffusers' prompt_clean (pipeline_wan.py: whitespace_clean(basic_clean(text))), in its order:
// ftfy.fix_text (text/fix_text.h; diffusers applies it where ftfy is installed, as in the reference
// environment), html.unescape twice (text/html_unescape.h), strip; then every run of (Unicode) whitespace
// folded to one space, strip.
std::string clean_prompt(const std::string& text);

// A prompt on its way to the text encoder, for the sidecar and --dry-run: as given, as cleaned (clean_prompt),
// its token count with eos before truncation, and whether max_sequence_length cuts it (the encoder then sees
// the first max_sequence_length - 1 tokens and eos, as diffusers does, silently).
struct PromptText {
  std::string given;
  std::string cleaned;
  int64_t tokens = 0;
  bool truncated = false;
  std::vector<int64_t> ids;  // the cleaned text's ids, without eos, not truncated: what the encoder is fed
};
PromptText describe_prompt(const text::Umt5Tokenizer& tokenizer, const std::string& prompt,
                           int64_t max_sequence_length);

// WanPipeline._get_t5_prompt_embeds: clean each prompt (clean_prompt), tokenize to `max_sequence_length`, run
// the encoder, keep each row's first true-length positions and zero the rest; returns prompt_embeds
// [B, max_sequence_length, d_model] in `dtype` on `device` (where the encoder's parameters live).
at::Tensor encode_prompts(const text::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<std::string>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device = at::kCPU, models::UnitHooks* hooks = nullptr);
// The same for prompts already described (describe_prompt): each cleaned and tokenized once, for the sidecar and
// the encoder alike.
at::Tensor encode_prompts(const text::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<PromptText>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device = at::kCPU, models::UnitHooks* hooks = nullptr);

}  // namespace omni::pipeline
