// The prompt's way to the text encoder, as diffusers' Wan pipelines take it: prompt_clean (html unescape,
// whitespace) and _get_t5_prompt_embeds (tokenize, encode, zero past each prompt's length).
#pragma once

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "models/module.h"

namespace omni::models {
class Umt5Tokenizer;
class Umt5Encoder;
}  // namespace omni::models

namespace omni::pipeline {

// Python's html.unescape: named references (the HTML 4 set plus &apos; and HTML5's semicolon-less legacy
// forms, longest-prefix rule included), &#NNN; and &#xHH; with the HTML5 replacements (cp1252 for 0x80-0x9F,
// U+FFFD for 0, surrogates and out-of-range values, nothing for noncharacters). Unknown names stay as written.
std::string html_unescape(const std::string& text);

// diffusers' prompt_clean: html unescape twice, strip, runs of (Unicode) whitespace folded to one space,
// strip. ftfy.fix_text, which diffusers also applies where installed, is an identity for plain text and is
// not reproduced.
std::string clean_prompt(const std::string& text);

// WanPipeline._get_t5_prompt_embeds: clean each prompt (clean_prompt), tokenize to `max_sequence_length`, run
// the encoder, keep each row's first true-length positions and zero the rest; returns prompt_embeds
// [B, max_sequence_length, d_model] in `dtype` on `device` (where the encoder's parameters live).
at::Tensor encode_prompts(const models::Umt5Tokenizer& tokenizer, const models::Umt5Encoder& encoder,
                          const std::vector<std::string>& prompts, int64_t max_sequence_length, at::ScalarType dtype,
                          const at::Device& device = at::kCPU, models::UnitHooks* hooks = nullptr);

}  // namespace omni::pipeline
