// Reading JSON files (configs, model_index.json, checkpoint indexes) with errors that name the file.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

namespace omni::io {

// Parses the file at `path`. A missing or unreadable file, or invalid JSON (with the parser's byte position),
// is an input error (exit 3) naming the file.
nlohmann::json read_json(const std::string& path);

// nlohmann's message in our words: without its "[json.exception.parse_error.101] " tag; a parse error's
// "parse error at line 2, column 5: " becomes "line 2, column 5: ", or goes when `position` is false (the caller
// names the position its own way), e.g. "syntax error while parsing value - invalid literal; last read: 'x'".
std::string json_error_text(const nlohmann::json::exception& e, bool position = true);

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

// One config file (model_index.json, a component's config.json or scheduler_config.json, tokenizer_config.json,
// special_tokens_map.json) read by the rule of diffusers' ConfigMixin and transformers' PretrainedConfig
// (docs/DESIGN.md section 5): every key a reader asks for, or declares known, is checked as that reader says;
// keys beginning with '_' are bookkeeping (_class_name is checked by the readers that care); any other key is
// ignored and named in one warning line per file (warn_unknown_keys). The getters mark the key as known.
class ConfigFile {
 public:
  // `j` must be a JSON object (input error naming `source` otherwise); `reader` names what reads it in the
  // warning ("diffusers' AutoencoderKLWan").
  ConfigFile(nlohmann::json j, std::string source, std::string reader);
  // Reads `path` (read_json).
  static ConfigFile read(const std::string& path, const std::string& reader);

  const std::string& source() const { return source_; }
  const nlohmann::json& json() const { return json_; }
  bool contains(const std::string& key) const { return json_.contains(key); }

  // The value of `key`, nullptr when absent or null.
  const nlohmann::json* find(const std::string& key);
  // The value of `key`, nullptr when absent (null is returned, for keys where null is a bad value).
  const nlohmann::json* value(const std::string& key);
  int64_t get_int(const std::string& key);  // required
  int64_t int_or(const std::string& key, int64_t fallback);
  // get_int / int_or whose value must be positive (an input error naming the source and the key otherwise).
  int64_t positive_int(const std::string& key);
  int64_t positive_int_or(const std::string& key, int64_t fallback);
  // transformers' record of the dtype the weights were saved in ('dtype' since 5, 'torch_dtype' before): known,
  // and an input error when it is not a floating dtype. It decides nothing (--dtype does, as the pipeline's
  // torch_dtype= does in diffusers).
  void check_saved_dtype();
  double number_or(const std::string& key, double fallback);
  bool bool_or(const std::string& key, bool fallback);
  std::string string_or(const std::string& key, const std::string& fallback);
  // Keys the reference library reads or stores that cannot change what we compute (dropout rates, training
  // betas, serialization details): known, so not warned about, and not used.
  void known(std::initializer_list<const char*> keys);

  // The keys no reader asked for, sorted ('_'-keys excluded).
  std::vector<std::string> unknown_keys() const;
  // Logs unknown_keys() once: see warn_unknown_keys.
  void warn_unknown() const;

 private:
  nlohmann::json json_;
  std::string source_;
  std::string reader_;
  std::set<std::string> known_;
};

// The warning for keys a config file carries that omni-generate does not read: one line, from rank 0 (every rank
// reads the same files), once per file and process (the layout choice, the memory plan and the loaders each
// read the model's configs). Nothing when `keys` is empty.
void warn_unknown_keys(const std::string& source, const std::string& reader, const std::vector<std::string>& keys);

}  // namespace omni::io
