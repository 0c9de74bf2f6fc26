// omni-generate's --help: the options in seven sections. The short help lists the options most runs need, one
// line each with a short text and its default ("[preset]" where a model's preset sets it), three examples and where
// the manual is; --help SECTION and --help-all describe every option of a section, or all, from the option table.
#pragma once

#include <string>
#include <vector>

namespace omni::config {

// "" the short help; a section's key (model, video, sampling, parallel, memory, outputs, debug) or "all": those
// options described in full. An unknown section is a usage error listing them.
std::string help_text(const std::string& section);
// Each help section's options, in order (every option is in exactly one: tests/config checks it).
std::vector<std::vector<std::string>> help_section_options();

}  // namespace omni::config
