// Reading JSON files (configs, model_index.json, checkpoint indexes) with errors that name the file.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace omni::io {

// Parses the file at `path`. A missing or unreadable file, or invalid JSON (with the parser's byte position),
// is an input error (exit 3) naming the file.
nlohmann::json read_json(const std::string& path);

// Typed values of config files (config.json, scheduler_config.json, ...), the one implementation every
// loader uses. A wrong type is an input error (exit 3): "<source>: '<key>' must be an integer, found 1.5".
// json_as_*: a value already looked up (`key` only names it in the message).
int64_t json_as_int(const nlohmann::json& v, const std::string& key, const std::string& source);
int64_t json_as_positive_int(const nlohmann::json& v, const std::string& key, const std::string& source);
double json_as_number(const nlohmann::json& v, const std::string& key, const std::string& source);
bool json_as_bool(const nlohmann::json& v, const std::string& key, const std::string& source);
std::vector<float> json_as_floats(const nlohmann::json& v, const std::string& key, const std::string& source);
// Keys of an object. Required: a missing key is an input error naming it. _or: absent or null gives
// `fallback` (diffusers' and transformers' configs write null for "the default").
int64_t json_int(const nlohmann::json& obj, const std::string& key, const std::string& source);
int64_t json_int_or(const nlohmann::json& obj, const std::string& key, int64_t fallback, const std::string& source);
double json_number_or(const nlohmann::json& obj, const std::string& key, double fallback, const std::string& source);
bool json_bool_or(const nlohmann::json& obj, const std::string& key, bool fallback, const std::string& source);
std::string json_string_or(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                           const std::string& source);

}  // namespace omni::io
