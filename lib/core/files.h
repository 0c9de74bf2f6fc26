// Small filesystem predicates shared by the layers (stat-based; no exceptions).
#pragma once

#include <string>

namespace omni {

bool is_dir(const std::string& path);
bool is_file(const std::string& path);  // a regular file
bool ends_with(const std::string& s, const std::string& suffix);

}  // namespace omni
