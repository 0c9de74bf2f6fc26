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

}  // namespace omni::io
