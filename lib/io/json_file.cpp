#include "io/json_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>

#include "core/error.h"
#include "core/log.h"

namespace omni::io {

nlohmann::json read_json(const std::string& path) {
  struct stat st {};
  OMNI_CHECK_INPUT(::stat(path.c_str(), &st) == 0, path, ": cannot read JSON file: ", std::strerror(errno));
  OMNI_CHECK_INPUT(S_ISREG(st.st_mode), path, ": expected a JSON file, found a directory or special file");
  std::ifstream in(path, std::ios::binary);
  OMNI_CHECK_INPUT(in.good(), path, ": cannot open JSON file: ", std::strerror(errno));
  std::ostringstream buf;
  buf << in.rdbuf();
  OMNI_CHECK_INPUT(!in.bad(), path, ": error while reading JSON file");
  try {
    return nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte: the 1-based position where parsing stopped; then "line 2, column 5: ...".
    OMNI_FAIL_INPUT(path, ": invalid JSON at byte ", e.byte, ", ", json_error_text(e));
  } catch (const nlohmann::json::exception& e) {
    OMNI_FAIL_INPUT(path, ": invalid JSON: ", json_error_text(e));
  }
}

std::string json_error_text(const nlohmann::json::exception& e, bool position) {
  std::string what = e.what();
  const size_t close = what.find("] ");
  if (what.rfind("[json.exception", 0) == 0 && close != std::string::npos) what = what.substr(close + 2);
  if (what.rfind("parse error", 0) == 0) {
    const size_t colon = what.find(": ");
    const size_t at = what.find(" at line ");
    if (!position && colon != std::string::npos) {
      what = what.substr(colon + 2);
    } else if (at != std::string::npos && at < colon) {
      what = what.substr(at + 4);  // "line 2, column 5: ..."
    } else if (colon != std::string::npos) {
      what = what.substr(colon + 2);
    }
  }
  return what;
}

int64_t json_as_int(const nlohmann::json& v, const std::string& key, const std::string& source) {
  OMNI_CHECK_INPUT(v.is_number_integer() || v.is_number_unsigned(), source, ": '", key, "' must be an integer, found ",
                   v.dump());
  return v.get<int64_t>();
}

int64_t json_as_positive_int(const nlohmann::json& v, const std::string& key, const std::string& source) {
  const int64_t x = json_as_int(v, key, source);
  OMNI_CHECK_INPUT(x > 0, source, ": '", key, "' must be positive, found ", x);
  return x;
}

double json_as_number(const nlohmann::json& v, const std::string& key, const std::string& source) {
  OMNI_CHECK_INPUT(v.is_number(), source, ": '", key, "' must be a number, found ", v.dump());
  return v.get<double>();
}

bool json_as_bool(const nlohmann::json& v, const std::string& key, const std::string& source) {
  OMNI_CHECK_INPUT(v.is_boolean(), source, ": '", key, "' must be true or false, found ", v.dump());
  return v.get<bool>();
}

std::vector<float> json_as_floats(const nlohmann::json& v, const std::string& key, const std::string& source) {
  OMNI_CHECK_INPUT(v.is_array(), source, ": '", key, "' must be a list of numbers, found ", v.dump());
  std::vector<float> out;
  for (const auto& e : v) out.push_back(static_cast<float>(json_as_number(e, key, source)));
  return out;
}

namespace {
// The value of `key`, or null when the object lacks it (or is no object).
const nlohmann::json* find_value(const nlohmann::json& obj, const std::string& key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}
}  // namespace

int64_t json_int(const nlohmann::json& obj, const std::string& key, const std::string& source) {
  const auto* v = find_value(obj, key);
  OMNI_CHECK_INPUT(v != nullptr, source, ": missing key '", key, "'");
  return json_as_int(*v, key, source);
}

int64_t json_int_or(const nlohmann::json& obj, const std::string& key, int64_t fallback, const std::string& source) {
  const auto* v = find_value(obj, key);
  return v ? json_as_int(*v, key, source) : fallback;
}

double json_number_or(const nlohmann::json& obj, const std::string& key, double fallback, const std::string& source) {
  const auto* v = find_value(obj, key);
  return v ? json_as_number(*v, key, source) : fallback;
}

bool json_bool_or(const nlohmann::json& obj, const std::string& key, bool fallback, const std::string& source) {
  const auto* v = find_value(obj, key);
  return v ? json_as_bool(*v, key, source) : fallback;
}

std::string json_string_or(const nlohmann::json& obj, const std::string& key, const std::string& fallback,
                           const std::string& source) {
  const auto* v = find_value(obj, key);
  if (!v) return fallback;
  OMNI_CHECK_INPUT(v->is_string(), source, ": '", key, "' must be a string, found ", v->dump());
  return v->get<std::string>();
}

ConfigFile::ConfigFile(nlohmann::json j, std::string source, std::string reader)
    : json_(std::move(j)), source_(std::move(source)), reader_(std::move(reader)) {
  OMNI_CHECK_INPUT(json_.is_object(), source_, ": expected a JSON object, found ", json_.type_name());
}

ConfigFile ConfigFile::read(const std::string& path, const std::string& reader) {
  return ConfigFile(read_json(path), path, reader);
}

const nlohmann::json* ConfigFile::find(const std::string& key) {
  known_.insert(key);
  return find_value(json_, key);
}

const nlohmann::json* ConfigFile::value(const std::string& key) {
  known_.insert(key);
  auto it = json_.find(key);
  return it == json_.end() ? nullptr : &*it;
}

int64_t ConfigFile::get_int(const std::string& key) {
  known_.insert(key);
  return json_int(json_, key, source_);
}

int64_t ConfigFile::int_or(const std::string& key, int64_t fallback) {
  known_.insert(key);
  return json_int_or(json_, key, fallback, source_);
}

int64_t ConfigFile::positive_int(const std::string& key) {
  const int64_t value = get_int(key);
  OMNI_CHECK_INPUT(value > 0, source_, ": '", key, "' must be positive, found ", value);
  return value;
}

int64_t ConfigFile::positive_int_or(const std::string& key, int64_t fallback) {
  const int64_t value = int_or(key, fallback);
  OMNI_CHECK_INPUT(value > 0, source_, ": '", key, "' must be positive, found ", value);
  return value;
}

void ConfigFile::check_saved_dtype() {
  for (const char* key : {"dtype", "torch_dtype"}) {
    const std::string v = string_or(key, "float32");
    OMNI_CHECK_INPUT(v == "float32" || v == "bfloat16" || v == "float16" || v == "float64", source_, ": '", key,
                     "' is '", v, "', expected float32, bfloat16, float16 or float64");
  }
}

double ConfigFile::number_or(const std::string& key, double fallback) {
  known_.insert(key);
  return json_number_or(json_, key, fallback, source_);
}

bool ConfigFile::bool_or(const std::string& key, bool fallback) {
  known_.insert(key);
  return json_bool_or(json_, key, fallback, source_);
}

std::string ConfigFile::string_or(const std::string& key, const std::string& fallback) {
  known_.insert(key);
  return json_string_or(json_, key, fallback, source_);
}

void ConfigFile::known(std::initializer_list<const char*> keys) {
  for (const char* k : keys) known_.insert(k);
}

std::vector<std::string> ConfigFile::unknown_keys() const {
  std::vector<std::string> out;
  for (auto it = json_.begin(); it != json_.end(); ++it) {
    const std::string& key = it.key();
    if (!key.empty() && key[0] != '_' && known_.count(key) == 0) out.push_back(key);
  }
  return out;
}

void ConfigFile::warn_unknown() const {
  warn_unknown_keys(source_, reader_, unknown_keys());
}

void warn_unknown_keys(const std::string& source, const std::string& reader, const std::vector<std::string>& keys) {
  if (keys.empty()) return;
  std::string names;
  for (const auto& k : keys) names += (names.empty() ? "'" : ", '") + k + "'";
  // Several readers open the same file in one run (layout choice, memory plan, load): one line per file.
  static std::mutex mutex;
  static std::set<std::string> warned;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!warned.insert(source + '\n' + names).second) return;
  }
  log::write_rank0(log::Level::kWarn, str_cat(source, ": ignoring ", keys.size() == 1 ? "key " : "keys ", names,
                                              ", unknown to omni-generate's ", reader,
                                              " (diffusers and transformers ignore unknown config keys too)"));
}

}  // namespace omni::io
