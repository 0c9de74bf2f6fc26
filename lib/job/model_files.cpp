#include "job/model_files.h"

#include <sys/stat.h>

#include <algorithm>
#include <ctime>
#include <filesystem>

#include "core/files.h"
#include "io/model_dir.h"

namespace omni::job {
namespace {

namespace fs = std::filesystem;

bool is_weight_file(const fs::path& p) {
  static const char* kExt[] = {".safetensors", ".pth", ".pt", ".bin", ".ckpt"};
  const std::string ext = p.extension().string();
  return std::any_of(std::begin(kExt), std::end(kExt), [&](const char* e) { return ext == e; });
}

// The SHA-256 a Hugging Face cache gives for free: snapshots/<rev>/<file> links to blobs/<sha256> for files kept
// in Git LFS (every weight file); "" otherwise.
std::string hub_blob_sha256(const fs::path& p) {
  std::error_code ec;
  if (!fs::is_symlink(p, ec)) return "";
  const std::string name = fs::read_symlink(p, ec).filename().string();
  if (ec || name.size() != 64) return "";
  for (char c : name)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return "";
  return name;
}

nlohmann::json file_record(const std::string& component, const fs::path& p) {
  nlohmann::json r{{"component", component}, {"file", p.string()}, {"bytes", file_size(p.string())}};
  if (const std::string sha = hub_blob_sha256(p); !sha.empty()) {
    r["sha256"] = sha;
    return r;
  }
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    char text[32];
    std::tm tm{};
    gmtime_r(&st.st_mtime, &tm);
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
    r["modified"] = text;
  }
  return r;
}

}  // namespace

nlohmann::json model_files_record(const io::ModelDir& dir) {
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& name : io::file_components()) {
    if (name == "tokenizer" || !dir.has(name)) continue;  // the weights' files only
    const std::string path = dir.component(name).checkpoint;
    if (path.empty()) continue;
    // A component folder (or a sharded checkpoint's index): its weight files; a single file: itself.
    const fs::path folder = is_dir(path)                     ? fs::path(path)
                            : ends_with(path, ".index.json") ? fs::path(path).parent_path()
                                                             : fs::path();
    if (folder.empty()) {
      out.push_back(file_record(name, path));
      continue;
    }
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec))
      if (is_weight_file(e.path()) && is_file(e.path().string())) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& f : files) out.push_back(file_record(name, f));
  }
  return out;
}

}  // namespace omni::job
