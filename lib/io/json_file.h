// Reading JSON files (configs, model_index.json, checkpoint indexes) with errors that name the file.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace omni::io {

// Parses the file at `path`. A missing or unreadable file, or invalid JSON (with the parser's byte position),
// is an input error (exit 3) naming the file.
nlohmann::json read_json(const std::string& path);

}  // namespace omni::io
