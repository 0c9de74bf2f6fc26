#include "io/json_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core/error.h"

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
    // e.byte is the 1-based position where parsing stopped; e.what() already carries line/column.
    OMNI_FAIL_INPUT(path, ": invalid JSON at byte ", e.byte, ": ", e.what());
  } catch (const nlohmann::json::exception& e) {
    OMNI_FAIL_INPUT(path, ": invalid JSON: ", e.what());
  }
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

}  // namespace omni::io
