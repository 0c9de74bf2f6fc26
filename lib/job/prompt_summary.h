// The prompts of a run as the text encoder gets them: cleaned (ftfy, HTML entities, whitespace) and counted in
// tokens, for --dry-run's listing and the warning when max_sequence_length cuts one (diffusers truncates
// silently).
#pragma once

#include <string>

#include "io/model_dir.h"
#include "job/video_queue.h"
#include "pipeline/prompt_encoding.h"
#include "text/umt5_tokenizer.h"

namespace omni::job {

// "" when `p` fits; otherwise one line: "<origin>: the <what> has N tokens; --max-sequence-length L keeps the
// first L-1 and eos".
// Warns, as the writing rank does after a video, when a prompt (and the negative one, when not null) was cut.
void warn_truncated(const pipeline::PromptText& prompt, const pipeline::PromptText* negative, const std::string& origin,
                    int max_sequence_length);
std::string truncation_warning(const pipeline::PromptText& p, const std::string& what, const std::string& origin,
                               int max_sequence_length);

// --dry-run: for each video of `queue` (the first `max_videos`, then a count of the rest), its prompt and, with
// guidance, its negative prompt, cleaned, with their token counts. Warns (rank 0) for each truncated one.
// describe_prompts on rank 0 of `world` ("" elsewhere), with the model's tokenizer read on every rank, so that a
// bad tokenizer folder is one agreed error. Collective.
std::string agreed_prompt_listing(const io::ModelDir& model, const VideoQueue& queue, const dist::Communicator& world);
std::string describe_prompts(const text::Umt5Tokenizer& tokenizer, const VideoQueue& queue, size_t max_videos);

}  // namespace omni::job
