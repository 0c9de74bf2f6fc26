// Checkpoint: one safetensors file, or the shards of a *.safetensors.index.json, seen as one set of tensors.
#include <sys/stat.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "core/files.h"
#include "io/json_file.h"
#include "io/safetensors.h"

namespace omni::io {

namespace {

std::string parent_dir(const std::string& p) {
  auto slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

std::string join(const std::string& dir, const std::string& name) {
  if (dir.empty() || dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

// The one checkpoint file of a diffusers component folder (transformer/, vae/, text_encoder/).
std::string find_in_folder(const std::string& dir) {
  static const char* kCandidates[] = {
      "diffusion_pytorch_model.safetensors.index.json",
      "diffusion_pytorch_model.safetensors",
      "model.safetensors.index.json",
      "model.safetensors",
  };
  std::vector<std::string> found;
  for (const char* c : kCandidates)
    if (is_file(join(dir, c))) found.push_back(c);
  OMNI_CHECK_INPUT(!found.empty(), dir,
                   ": no checkpoint found; expected one of diffusion_pytorch_model.safetensors[.index.json] or "
                   "model.safetensors[.index.json]");
  if (found.size() > 1) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    OMNI_FAIL_INPUT(dir, ": ambiguous checkpoint, found several: ", list, "; keep exactly one");
  }
  return join(dir, found[0]);
}

}  // namespace

Checkpoint Checkpoint::open(const std::string& path) {
  Checkpoint ck;
  ck.path_ = path;
  if (is_dir(path)) return open(find_in_folder(path));
  OMNI_CHECK_INPUT(is_file(path), path,
                   ": checkpoint not found (expected a .safetensors file, a "
                   ".safetensors.index.json file or a component folder)");

  if (!ends_with(path, ".json")) {
    auto file = std::make_shared<SafetensorsFile>(path);
    for (const auto& n : file->names()) ck.owner_[n] = file.get();
    ck.files_.push_back(std::move(file));
  } else {
    const nlohmann::json index = read_json(path);
    OMNI_CHECK_INPUT(index.is_object(), path, ": checkpoint index must be a JSON object");
    auto wm = index.find("weight_map");
    OMNI_CHECK_INPUT(wm != index.end() && wm->is_object(), path,
                     ": checkpoint index has no \"weight_map\" object {tensor: file}");
    const std::string dir = parent_dir(path);
    std::map<std::string, std::shared_ptr<SafetensorsFile>> shards;  // by file name in the index
    std::map<std::string, std::string> shard_of;                     // tensor -> file name
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      OMNI_CHECK_INPUT(it.value().is_string(), path, ": weight_map entry for tensor '", it.key(),
                       "' must be a file name string");
      const std::string shard = it.value().get<std::string>();
      shard_of[it.key()] = shard;
      if (shards.count(shard)) continue;
      const std::string shard_path = join(dir, shard);
      OMNI_CHECK_INPUT(is_file(shard_path), path, ": shard file ", shard_path, " (holding tensor '", it.key(),
                       "') does not exist");
      shards[shard] = std::make_shared<SafetensorsFile>(shard_path);
    }
    for (const auto& [tensor, shard] : shard_of) {
      SafetensorsFile* f = shards.at(shard).get();
      OMNI_CHECK_INPUT(f->contains(tensor), path, ": tensor '", tensor, "' is listed in the index for shard ",
                       f->path(), " but that file does not contain it");
      ck.owner_[tensor] = f;
    }
    for (const auto& [shard, f] : shards) {
      for (const auto& n : f->names()) {
        auto it = shard_of.find(n);
        OMNI_CHECK_INPUT(it != shard_of.end(), f->path(), ": tensor '", n, "' is in this shard but not in the index ",
                         path);
        OMNI_CHECK_INPUT(it->second == shard, f->path(), ": tensor '", n, "' is in this shard but the index ", path,
                         " maps it to ", it->second);
      }
      ck.files_.push_back(f);
    }
  }
  for (const auto& kv : ck.owner_) ck.names_.push_back(kv.first);  // std::map: already sorted
  return ck;
}

bool Checkpoint::contains(const std::string& name) const {
  return owner_.count(name) != 0;
}

const TensorInfo& Checkpoint::info(const std::string& name) const {
  auto it = owner_.find(name);
  OMNI_CHECK_INPUT(it != owner_.end(), path_, ": checkpoint has no tensor named '", name, "'");
  return it->second->info(name);
}

at::Tensor Checkpoint::read(const std::string& name, at::ScalarType dtype) const {
  info(name);  // input error naming the checkpoint if absent
  return owner_.at(name)->read(name, dtype);
}

at::Tensor Checkpoint::read_range(const std::string& name, int64_t elem_begin, int64_t count,
                                  at::ScalarType dtype) const {
  info(name);
  return owner_.at(name)->read_range(name, elem_begin, count, dtype);
}

at::Tensor Checkpoint::read_flat(const std::vector<std::string>& tensors, int64_t elem_begin, int64_t count,
                                 at::ScalarType dtype, const ReadAdjust* adjust) const {
  OMNI_CHECK(elem_begin >= 0 && count >= 0, "read_flat: invalid range begin ", elem_begin, " count ", count);
  if (dtype == at::ScalarType::Undefined) {
    OMNI_CHECK(!tensors.empty(), "read_flat: an empty tensor list needs an explicit dtype");
    dtype = to_scalar_type(info(tensors[0]).dtype);
  }
  at::Tensor out = at::zeros({count}, at::TensorOptions().dtype(dtype).device(at::kCPU));
  const int64_t want_end = elem_begin + count;
  int64_t pos = 0;  // start of the current tensor in the concatenation
  for (const auto& name : tensors) {
    if (pos >= want_end) break;
    const int64_t n = info(name).numel();
    const int64_t lo = std::max(pos, elem_begin);
    const int64_t hi = std::min(pos + n, want_end);
    if (hi > lo && adjust != nullptr && adjust->touches(name)) {
      for (int64_t a = lo; a < hi; a += kAdjustPiece) {
        const int64_t n = std::min(kAdjustPiece, hi - a);
        at::Tensor values = read_range(name, a - pos, n, at::kFloat);  // [n], a fresh copy
        adjust->add(name, a - pos, values);
        out.narrow(0, a - elem_begin, n).copy_(values);  // the one rounding to `dtype`
      }
    } else if (hi > lo) {
      out.narrow(0, lo - elem_begin, hi - lo).copy_(read_range(name, lo - pos, hi - lo, dtype));
    }
    pos += n;
  }
  return out;  // anything past the concatenation stays zero (HSDP padding)
}

int64_t Checkpoint::bytes_read() const {
  int64_t total = 0;
  for (const auto& f : files_) total += f->bytes_read();
  return total;
}

int64_t Checkpoint::total_bytes() const {
  int64_t total = 0;
  for (const auto& kv : owner_) {
    const TensorInfo& ti = kv.second->info(kv.first);
    total += ti.data_end - ti.data_begin;
  }
  return total;
}

}  // namespace omni::io
