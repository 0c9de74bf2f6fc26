// Small string helpers shared by the layers: the edit distance behind every "did you mean ...?" hint.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace omni {

// Levenshtein distance (insertions, deletions, substitutions of one character each cost 1).
size_t edit_distance(const std::string& a, const std::string& b);

// The `count` entries of `candidates` closest to `name` by edit distance, closest first (ties keep the
// candidates' order).
std::vector<std::string> closest_names(const std::string& name, const std::vector<std::string>& candidates,
                                       size_t count);

}  // namespace omni
