// safetensors checkpoints: a memory-mapped reader that validates the header before trusting it, sharded
// checkpoints through *.safetensors.index.json, ranged reads (what one HSDP shard covers), and a writer.
//
// Format: 8-byte little-endian header length N, N bytes of JSON {name: {dtype, shape, data_offsets: [b, e]},
// "__metadata__": {str: str}}, then the data section; offsets are relative to the data section.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace omni::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

// "F32" -> DType::F32; returns false for a name not in the list.
bool parse_dtype(const std::string& name, DType* out);
const char* dtype_name(DType dtype);
int64_t dtype_size(DType dtype);
at::ScalarType to_scalar_type(DType dtype);  // F8 types have no 1.13 equivalent: they are converted by hand
DType from_scalar_type(at::ScalarType type);

struct TensorInfo {
  std::string name;
  std::string file;  // path of the file that holds it
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t data_begin = 0;  // byte offsets relative to the data section
  int64_t data_end = 0;
  int64_t numel() const;
};

// One .safetensors file. Opening it validates the whole header: length within the file and below 100 MB,
// valid JSON, known dtypes, shape x dtype size equal to each byte range, ranges inside the data section,
// no two ranges overlapping. Any violation throws an input error (exit 3) naming the file and the tensor.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  ~SafetensorsFile();
  SafetensorsFile(const SafetensorsFile&) = delete;
  SafetensorsFile& operator=(const SafetensorsFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // in data-offset order
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // input error naming the tensor and file if absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

  // The whole tensor in its shape, converted to `dtype` (at::ScalarType::Undefined keeps the stored type).
  at::Tensor read(const std::string& name, at::ScalarType dtype = at::ScalarType::Undefined) const;
  // Elements [elem_begin, elem_begin + count) of the tensor in row-major order as a 1-D tensor; touches
  // only those bytes of the file.
  at::Tensor read_range(const std::string& name, int64_t elem_begin, int64_t count,
                        at::ScalarType dtype = at::ScalarType::Undefined) const;
  // Bytes of tensor data copied out of the mapping so far (for the load accounting).
  int64_t bytes_read() const { return bytes_read_; }

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;
  int64_t file_size_ = 0;
  int64_t data_offset_ = 0;  // 8 + header length
  std::vector<std::string> names_;
  std::map<std::string, TensorInfo> infos_;
  std::map<std::string, std::string> metadata_;
  mutable int64_t bytes_read_ = 0;
};

// A checkpoint: one .safetensors file or a set of shards listed by a *.safetensors.index.json
// ({"weight_map": {tensor: file}}). Every shard named by the index must exist and every tensor it lists must
// be in its shard; a tensor in a shard but not in the index is an error too.
// Changes tensors as they are read (LoRA merging): the tensors `touches` names are read in float32, a piece
// at a time, handed to `add` (name, the piece's first element in the tensor, its values to add to in place),
// and rounded once to the requested dtype.
struct ReadAdjust {
  std::function<bool(const std::string& name)> touches;
  std::function<void(const std::string& name, int64_t elem_begin, at::Tensor& values)> add;
};

class Checkpoint {
 public:
  // `path`: a .safetensors file, a .safetensors.index.json file, or a component folder holding exactly one
  // of: <stem>.safetensors.index.json or *.safetensors (diffusion_pytorch_model / model).
  static Checkpoint open(const std::string& path);

  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // sorted by name
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;
  at::Tensor read(const std::string& name, at::ScalarType dtype = at::ScalarType::Undefined) const;
  at::Tensor read_range(const std::string& name, int64_t elem_begin, int64_t count,
                        at::ScalarType dtype = at::ScalarType::Undefined) const;
  // Elements [elem_begin, elem_begin + count) of the concatenation of the flattened `tensors` (in the given
  // order), as one 1-D tensor of `dtype`. The range may cross tensor and file boundaries; only the bytes it
  // covers are read. Positions past the end of the concatenation are zero (HSDP pads the last shard).
  // With `adjust`, its tensors are read in float32 pieces of at most kAdjustPiece elements (bounded memory
  // beside the result) and adjusted before the one rounding to `dtype`.
  static constexpr int64_t kAdjustPiece = int64_t{1} << 20;
  at::Tensor read_flat(const std::vector<std::string>& tensors, int64_t elem_begin, int64_t count, at::ScalarType dtype,
                       const ReadAdjust* adjust = nullptr) const;
  int64_t bytes_read() const;   // over all shards
  int64_t total_bytes() const;  // stored bytes of all tensors

 private:
  std::string path_;
  std::vector<std::shared_ptr<SafetensorsFile>> files_;
  std::map<std::string, SafetensorsFile*> owner_;
  std::vector<std::string> names_;
};

// Writes `tensors` (any dtype; written contiguous, in the given order) to `path` atomically (temporary file
// in the same folder, then rename).
void write_safetensors(const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// Writes `tensors` as a sharded checkpoint in `dir` the way Hugging Face does: shards
// <stem>-00001-of-0000N.safetensors filled in order up to `max_shard_bytes` each (a larger tensor gets a shard of
// its own) and <stem>.safetensors.index.json {"metadata": {"total_size": ...}, "weight_map": {tensor: file}}.
// Returns the path of the index file.
std::string write_sharded_safetensors(const std::string& dir, const std::string& stem,
                                      const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                                      int64_t max_shard_bytes);

}  // namespace omni::io
