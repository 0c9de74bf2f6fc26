// Checkpoint: one safetensors file, or the shards of a *.safetensors.index.json, seen as one set of tensors.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>
#include <initializer_list>
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
    if (is_file(join_path(dir, c))) found.push_back(c);
  OMNI_CHECK_INPUT(!found.empty(), dir,
                   ": no checkpoint found; expected one of diffusion_pytorch_model.safetensors[.index.json] or "
                   "model.safetensors[.index.json]");
  if (found.size() > 1) {
    std::string list;
    for (const auto& f : found) list += (list.empty() ? "" : ", ") + f;
    OMNI_FAIL_INPUT(dir, ": ambiguous checkpoint, found several: ", list, "; keep exactly one");
  }
  return join_path(dir, found[0]);
}

}  // namespace

namespace {

bool ends_with_any(const std::string& s, std::initializer_list<const char*> suffixes) {
  for (const char* suffix : suffixes)
    if (ends_with(s, suffix)) return true;
  return false;
}

// ComfyUI's scaled-float8 companions of a weight: `<layer>.scale_weight` (or `<layer>.weight_scale`) -> the
// weight `<layer>.weight`; empty when `stored` is not one.
std::string scaled_weight_of(const std::string& stored) {
  for (const char* suffix : {".scale_weight", ".weight_scale"})
    if (ends_with(stored, suffix)) return stored.substr(0, stored.size() - std::strlen(suffix)) + ".weight";
  return "";
}

// Stored tensors that describe the quantization rather than hold model weights, and the tokenizer some
// ComfyUI text-encoder files carry along (spiece_model, a SentencePiece model's bytes).
bool is_quantization_note(const std::string& stored) {
  return stored == "scaled_fp8" || stored == "spiece_model" || ends_with(stored, ".scaled_fp8") ||
         ends_with_any(stored, {".scale_input", ".input_scale", ".comfy_quant"});
}

}  // namespace

void Checkpoint::add_file(std::shared_ptr<TensorFile> file, const NameMap* names) {
  TensorFile* f = file.get();
  files_.push_back(std::move(file));
  // Scales first: a weight's scale must be known when the weight is listed.
  std::map<std::string, at::Tensor> scales;  // stored weight name -> float32 scale
  for (const auto& stored : f->names()) {
    const std::string weight = scaled_weight_of(stored);
    if (weight.empty() || !f->contains(weight)) continue;
    const TensorInfo& w = f->info(weight);
    const TensorInfo& s = f->info(stored);
    OMNI_CHECK_INPUT(w.dtype == DType::F8_E4M3 || w.dtype == DType::F8_E5M2, f->path(), ": '", stored, "' scales '",
                     weight, "', which is stored as ", dtype_name(w.dtype), ", not float8");
    const int64_t rows = w.shape.empty() ? 1 : w.shape[0];
    OMNI_CHECK_INPUT(s.numel() == 1 || s.numel() == rows, f->path(), ": scale '", stored, "' has ", s.numel(),
                     " values; expected 1 (per tensor) or ", rows, " (one per output row of '", weight, "')");
    scales[weight] = f->read(stored, at::kFloat).reshape({s.numel()});
  }
  for (const auto& stored : f->names()) {
    const std::string weight = scaled_weight_of(stored);
    if ((!weight.empty() && scales.count(weight)) || is_quantization_note(stored)) continue;
    std::string bare = stored;
    if (names != nullptr && !names->strip_prefix.empty() &&
        bare.compare(0, names->strip_prefix.size(), names->strip_prefix) == 0)
      bare = bare.substr(names->strip_prefix.size());
    if (names != nullptr && names->skip && names->skip(bare)) continue;
    const TensorInfo& ti = f->info(stored);
    at::Tensor scale;
    if (auto it = scales.find(stored); it != scales.end()) scale = it->second;
    // Our names for it: one, or the blocks of a tensor that holds several of ours.
    std::vector<std::string> ours = names != nullptr && names->split ? names->split(bare) : std::vector<std::string>{};
    const bool split = !ours.empty();
    if (!split && names != nullptr) {
      const auto renamed = names->rename(bare);
      OMNI_CHECK_INPUT(renamed.has_value(), f->path(), ": tensor '", stored, "' is not a tensor of ", names->table,
                       " (no module of the model has that name)");
      ours.push_back(*renamed);
    } else if (!split) {
      ours.push_back(stored);
    }
    const int64_t parts = static_cast<int64_t>(ours.size());
    const int64_t rows = ti.shape.empty() ? 0 : ti.shape[0];
    OMNI_CHECK_INPUT(!split || (rows > 0 && rows % parts == 0), f->path(), ": tensor '", stored, "' of shape ",
                     at::IntArrayRef(ti.shape), " should hold ", parts, " equal blocks along its first dimension (",
                     ours.front(), ", ...)");
    const int64_t block_rows = split ? rows / parts : rows;
    const int64_t block_numel = split ? ti.numel() / parts : ti.numel();
    const int64_t elem_bytes = ti.numel() > 0 ? (ti.data_end - ti.data_begin) / ti.numel() : 0;
    for (int64_t part = 0; part < parts; ++part) {
      const std::string& name = ours[part];
      OMNI_CHECK_INPUT(entries_.count(name) == 0, f->path(), ": tensor '", stored, "' is '", name,
                       "' again (stored twice, or two names mean the same module)");
      Entry e;
      e.file = f;
      e.stored = stored;
      e.view = ti;
      if (split) {
        e.offset = part * block_numel;
        e.view.shape[0] = block_rows;
        e.view.data_begin = ti.data_begin + e.offset * elem_bytes;
        e.view.data_end = e.view.data_begin + block_numel * elem_bytes;
      }
      // A per-row scale follows the block's rows.
      e.scale = split && scale.defined() && scale.numel() > 1 ? scale.narrow(0, part * block_rows, block_rows) : scale;
      if (names != nullptr && names->squeeze_leading && names->squeeze_leading(name)) {
        while (e.view.shape.size() > 1 && e.view.shape.front() == 1) e.view.shape.erase(e.view.shape.begin());
        while (e.view.shape.size() > 1 && e.view.shape.back() == 1) e.view.shape.pop_back();
      }
      entries_.emplace(name, std::move(e));
    }
  }
}

Checkpoint Checkpoint::open(const std::string& path, const NameMap* names) {
  Checkpoint ck;
  ck.path_ = path;
  if (is_dir(path)) return open(find_in_folder(path), names);
  OMNI_CHECK_INPUT(is_file(path), path,
                   ": checkpoint not found (expected a .safetensors, .safetensors.index.json or .pth file, or a "
                   "component folder)");

  if (!ends_with(path, ".json")) {
    ck.add_file(open_tensor_file(path), names);
  } else {
    const nlohmann::json index = read_json(path);
    OMNI_CHECK_INPUT(index.is_object(), path, ": checkpoint index must be a JSON object");
    auto wm = index.find("weight_map");
    OMNI_CHECK_INPUT(wm != index.end() && wm->is_object(), path,
                     ": checkpoint index has no \"weight_map\" object {tensor: file}");
    const std::string dir = parent_dir(path);
    std::map<std::string, std::shared_ptr<TensorFile>> shards;  // by file name in the index
    std::map<std::string, std::string> shard_of;                // tensor -> file name
    for (auto it = wm->begin(); it != wm->end(); ++it) {
      OMNI_CHECK_INPUT(it.value().is_string(), path, ": weight_map entry for tensor '", it.key(),
                       "' must be a file name string");
      const std::string shard = it.value().get<std::string>();
      shard_of[it.key()] = shard;
      if (shards.count(shard)) continue;
      const std::string shard_path = join_path(dir, shard);
      OMNI_CHECK_INPUT(is_file(shard_path), path, ": shard file ", shard_path, " (holding tensor '", it.key(),
                       "') does not exist");
      shards[shard] = std::make_shared<SafetensorsFile>(shard_path);
    }
    for (const auto& [tensor, shard] : shard_of) {
      TensorFile* f = shards.at(shard).get();
      OMNI_CHECK_INPUT(f->contains(tensor), path, ": tensor '", tensor, "' is listed in the index for shard ",
                       f->path(), " but that file does not contain it");
    }
    for (const auto& [shard, f] : shards) {
      for (const auto& n : f->names()) {
        auto it = shard_of.find(n);
        OMNI_CHECK_INPUT(it != shard_of.end(), f->path(), ": tensor '", n, "' is in this shard but not in the index ",
                         path);
        OMNI_CHECK_INPUT(it->second == shard, f->path(), ": tensor '", n, "' is in this shard but the index ", path,
                         " maps it to ", it->second);
      }
      ck.add_file(f, names);
    }
  }
  for (const auto& kv : ck.entries_) ck.names_.push_back(kv.first);  // std::map: already sorted
  return ck;
}

void Checkpoint::release_pages() const {
  for (const auto& f : files_) f->release_pages();
}

Checkpoint Checkpoint::renamed(const NameMap* names) const {
  Checkpoint ck;
  ck.path_ = path_;
  for (const auto& f : files_) ck.add_file(f, names);
  for (const auto& kv : ck.entries_) ck.names_.push_back(kv.first);
  return ck;
}

const Checkpoint::Entry& Checkpoint::entry(const std::string& name) const {
  auto it = entries_.find(name);
  OMNI_CHECK_INPUT(it != entries_.end(), path_, ": checkpoint has no tensor named '", name, "'");
  return it->second;
}

bool Checkpoint::contains(const std::string& name) const {
  return entries_.count(name) != 0;
}

const TensorInfo& Checkpoint::info(const std::string& name) const {
  return entry(name).view;
}

bool Checkpoint::scaled(const std::string& name) const {
  return entry(name).scale.defined();
}

at::Tensor Checkpoint::float8_row_scales(const std::string& name) const {
  const Entry& e = entry(name);
  const TensorInfo& ti = e.view;
  if (ti.dtype != DType::F8_E4M3 || ti.shape.size() != 2) return at::Tensor();
  const int64_t rows = ti.shape[0];
  if (!e.scale.defined()) return at::ones({rows}, at::kFloat);           // float8 stored plainly: value = byte
  if (e.scale.numel() == 1) return e.scale.expand({rows}).contiguous();  // one scale for the tensor
  return e.scale.clone();                                                // [rows]
}

at::Tensor Checkpoint::read(const std::string& name, at::ScalarType dtype) const {
  const TensorInfo& ti = info(name);
  return read_range(name, 0, ti.numel(), dtype).view(ti.shape);
}

at::Tensor Checkpoint::read_range(const std::string& name, int64_t elem_begin, int64_t count,
                                  at::ScalarType dtype) const {
  const Entry& e = entry(name);
  if (dtype == at::kFloat8_e4m3fn) {
    // The stored bytes, unscaled: the caller holds the scales (float8_row_scales).
    OMNI_CHECK(e.view.dtype == DType::F8_E4M3, path_, ": '", name,
               "' is not stored in float8_e4m3fn; it cannot be read as stored float8");
    return e.file->read_range(e.stored, e.offset + elem_begin, count, dtype);
  }
  if (!e.scale.defined()) return e.file->read_range(e.stored, e.offset + elem_begin, count, dtype);
  // float8 x scale in float32 (float8 converts exactly), then the one rounding to `dtype`.
  at::Tensor values = e.file->read_range(e.stored, e.offset + elem_begin, count, at::kFloat);  // [count]
  if (e.scale.numel() == 1) {
    values.mul_(e.scale.item<float>());
  } else if (count > 0) {
    const auto& shape = e.view.shape;
    int64_t cols = 1;
    for (size_t d = 1; d < shape.size(); ++d) cols *= shape[d];
    const at::Tensor rows = at::arange(elem_begin, elem_begin + count, at::kLong).div(cols, "floor");  // [count]
    values.mul_(e.scale.index_select(0, rows));
  }
  if (dtype != at::ScalarType::Undefined && dtype != at::kFloat) values = values.to(dtype);
  return values;
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
      OMNI_CHECK(dtype != at::kFloat8_e4m3fn, path_, ": '", name, "' is adjusted as read; it has no stored float8");
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
  for (const auto& kv : entries_) total += info(kv.first).data_end - info(kv.first).data_begin;
  return total;
}

}  // namespace omni::io
