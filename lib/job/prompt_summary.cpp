#include "job/prompt_summary.h"

#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "dist/agreement.h"

namespace omni::job {

std::string truncation_warning(const pipeline::PromptText& p, const std::string& what, const std::string& origin,
                               int max_sequence_length) {
  if (!p.truncated) return "";
  return str_cat(origin.empty() ? "" : origin + ": ", "the ", what, " has ", p.tokens,
                 " tokens; --max-sequence-length ", max_sequence_length, " keeps the first ", max_sequence_length - 1,
                 " and eos");
}

void warn_truncated(const pipeline::PromptText& prompt, const pipeline::PromptText* negative, const std::string& origin,
                    int max_sequence_length) {
  const std::string line = truncation_warning(prompt, "prompt", origin, max_sequence_length);
  if (!line.empty()) OMNI_WARN(line);
  if (!negative) return;
  const std::string neg = truncation_warning(*negative, "negative prompt", origin, max_sequence_length);
  if (!neg.empty()) OMNI_WARN(neg);
}

std::string agreed_prompt_listing(const io::ModelDir& model, const VideoQueue& queue, const dist::Communicator& world) {
  std::string out;
  dist::run_agreed(world, [&] {
    const auto tokenizer = text::Umt5Tokenizer::of_model(model);
    if (world.rank() == 0) out = describe_prompts(tokenizer, queue, /*max_videos=*/20);
  });
  return out;
}

std::string describe_prompts(const text::Umt5Tokenizer& tokenizer, const VideoQueue& queue, size_t max_videos) {
  std::ostringstream os;
  os << "prompts (as the text encoder gets them: cleaned, and their tokens with eos):\n";
  for (size_t i = 0; i < queue.size(); ++i) {
    const VideoSpec& v = queue.video(static_cast<int>(i));
    const auto params = v.params();
    const int max_len = params.max_sequence_length;
    const auto prompt = pipeline::describe_prompt(tokenizer, v.opts.prompt, max_len);
    std::string line = truncation_warning(prompt, "prompt", v.origin, max_len);
    if (!line.empty()) OMNI_WARN(line);
    std::string negative_line;
    if (params.guidance_on()) {
      const auto negative = pipeline::describe_prompt(tokenizer, v.opts.negative_prompt, max_len);
      line = truncation_warning(negative, "negative prompt", v.origin, max_len);
      if (!line.empty()) OMNI_WARN(line);
      negative_line = str_cat("    negative: ", nlohmann::json(negative.cleaned).dump(), " (", negative.tokens, " of ",
                              max_len, " tokens", negative.truncated ? ", truncated" : "", ")\n");
    }
    if (i >= max_videos) continue;  // warned above, not listed
    os << "  video " << i << (v.origin.empty() ? "" : " (" + v.origin + ")") << ": "
       << nlohmann::json(prompt.cleaned).dump() << " (" << prompt.tokens << " of " << max_len << " tokens"
       << (prompt.truncated ? ", truncated" : "") << ")\n"
       << negative_line;
  }
  if (queue.size() > max_videos) os << "  ... and " << queue.size() - max_videos << " more video(s)\n";
  return os.str();
}

}  // namespace omni::job
