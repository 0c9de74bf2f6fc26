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
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace omni::io {

enum class DType { F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL, F8_E4M3, F8_E5M2 };

// "F32" -> DType::F32; returns false for a name not in the list.
bool parse_dtype(const std::string& name, DType* out);
const char* dtype_name(DType dtype);
int64_t dtype_size(DType dtype);
at::ScalarType to_scalar_type(DType dtype);  // F8 types: float32, what they read as by default
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

// A file of named tensors, each stored contiguously (row-major, little-endian) at a known byte range of the file,
// memory-mapped: the common ground of .safetensors files and torch.save's .pth archives (io/pth_file.h). A
// subclass maps the file (map_file), validates its own format and registers each tensor (add_tensor) with byte
// offsets relative to data_offset(); reads then touch only the bytes asked for.
class TensorFile {
 public:
  virtual ~TensorFile();
  TensorFile(const TensorFile&) = delete;
  TensorFile& operator=(const TensorFile&) = delete;

  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // in data-offset order
  bool contains(const std::string& name) const;
  const TensorInfo& info(const std::string& name) const;  // input error naming the tensor and file if absent
  // The whole tensor in its shape, converted to `dtype` (at::ScalarType::Undefined keeps the stored type).
  at::Tensor read(const std::string& name, at::ScalarType dtype = at::ScalarType::Undefined) const;
  // Elements [elem_begin, elem_begin + count) of the tensor in row-major order as a 1-D tensor; touches
  // only those bytes of the file. A float8 tensor reads as float32 (exact) unless its own float8 type is asked
  // for, which gives the stored bytes.
  at::Tensor read_range(const std::string& name, int64_t elem_begin, int64_t count,
                        at::ScalarType dtype = at::ScalarType::Undefined) const;
  // Bytes of tensor data copied out of the mapping so far (for the load accounting).
  int64_t bytes_read() const { return bytes_read_; }
  int64_t file_size() const { return file_size_; }
  // Gives the pages of the mapping this process touched back (MADV_DONTNEED): they no longer count as its memory,
  // and a later read faults them in again from the file. The header and the mapping stay.
  void release_pages() const;

 protected:
  explicit TensorFile(std::string path) : path_(std::move(path)) {}
  // Opens and maps the whole file read-only (input errors name the file; `what` says what was expected, as in
  // "a .safetensors file").
  void map_file(const char* what);
  const uint8_t* map() const { return map_; }
  void set_data_offset(int64_t offset) { data_offset_ = offset; }
  int64_t data_offset() const { return data_offset_; }
  // Registers a tensor whose bytes [data_begin, data_end) (relative to data_offset()) the subclass has checked:
  // inside the file, numel x dtype size long. Then, once all are added, finish_tensors() sorts them by offset
  // and refuses overlaps.
  void add_tensor(TensorInfo info);
  void finish_tensors();
  // Unmaps and closes; for a subclass whose constructor throws (the base destructor runs too, harmlessly).
  void release();

 private:
  std::string path_;
  int fd_ = -1;
  const uint8_t* map_ = nullptr;
  int64_t file_size_ = 0;
  int64_t data_offset_ = 0;
  std::vector<std::string> names_;
  std::map<std::string, TensorInfo> infos_;
  mutable int64_t bytes_read_ = 0;
};

// One .safetensors file. Opening it validates the whole header: length within the file and below 100 MB,
// valid JSON, known dtypes, shape x dtype size equal to each byte range, ranges inside the data section,
// no two ranges overlapping. Any violation throws an input error (exit 3) naming the file and the tensor.
class SafetensorsFile : public TensorFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::map<std::string, std::string> metadata_;
};

// Opens a tensor file by its kind: a .pth / .pt / .bin torch.save archive (io/pth_file.h), else safetensors.
std::shared_ptr<TensorFile> open_tensor_file(const std::string& path);

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

// How a file's stored names become ours (io/wan_names.h). `rename` gives our name for a stored one, after
// `strip_prefix` is removed where present, or nothing for a tensor that is not part of the model: an input error
// naming the tensor, the file and `table`. The optional hooks serve layouts that store a module differently
// (open_clip's and Wan's CLIP: one fused q/k/v projection, embeddings with leading unit dims, a text tower):
struct NameMap {
  std::string table;  // what the names are, for messages: "Wan2.2's original transformer names"
  std::string strip_prefix;
  std::function<std::optional<std::string>(const std::string& stored)> rename;
  // A stored tensor that holds several of ours as equal blocks along dim 0 (a fused q/k/v weight or bias): our
  // names in block order; empty for any other tensor (then `rename` names it).
  std::function<std::vector<std::string>(const std::string& stored)> split;
  // Stored tensors of another model the file carries too (the text tower of a CLIP checkpoint): not listed.
  std::function<bool(const std::string& stored)> skip;
  // Our tensors stored with extra unit dims, leading or trailing ([1, 1, D] for our [D]: CLIP's; [1, C, 1, 1] for
  // our [C]: Wan2.2-Animate's fused leaky-ReLU biases): listed without them.
  std::function<bool(const std::string& ours)> squeeze_leading;
};

class Checkpoint {
 public:
  // `path`: a .safetensors file, a .safetensors.index.json file, a torch.save .pth file (io/pth_file.h), or a
  // component folder holding exactly one of: <stem>.safetensors.index.json or *.safetensors
  // (diffusion_pytorch_model / model). With `names`, the stored names are renamed to ours as they are listed.
  //
  // Scaled float8 weights (ComfyUI's fp8_scaled files) are read as float8 x scale: a `<layer>.weight` in float8
  // with a `<layer>.scale_weight` (or the newer `<layer>.weight_scale`) float scalar, or one scale per output
  // row. The scales, the activation scales (`scale_input`, `input_scale`), the `comfy_quant` descriptions and the
  // `scaled_fp8` marker are consumed, not model tensors.
  static Checkpoint open(const std::string& path, const NameMap* names = nullptr);
  // The same open files listed under other names (`names`; null: as stored): a file whose name layout is told
  // from its stored names is not opened (or, for a .pth, unpickled) a second time.
  Checkpoint renamed(const NameMap* names) const;

  const std::string& path() const { return path_; }
  const std::vector<std::string>& names() const { return names_; }  // our names, sorted
  bool contains(const std::string& name) const;
  // The stored tensor behind our `name` (its name in the file, dtype, shape and bytes).
  const TensorInfo& info(const std::string& name) const;
  // True when `name` is a float8 weight read times its scale.
  bool scaled(const std::string& name) const;
  // A [rows, cols] weight stored in float8_e4m3fn (an fp8_scaled file's, or one stored in float8 plainly): its
  // scale per row, [rows] float32 (a per-tensor scale repeated; 1 where the file has none). Undefined for any
  // other tensor. Its values are byte x row scale; read_range(name, ..., at::kFloat8_e4m3fn) gives the bytes.
  at::Tensor float8_row_scales(const std::string& name) const;
  at::Tensor read(const std::string& name, at::ScalarType dtype = at::ScalarType::Undefined) const;
  // `dtype` float8_e4m3fn: the stored float8 bytes, unscaled (only for a tensor stored so).
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
  int64_t bytes_read() const;  // over all files
  // TensorFile::release_pages of every file: what a loader calls once it has read the component, so that the
  // checkpoint (opened once, kept for its headers) does not hold the file's pages as the process's memory.
  void release_pages() const;
  int64_t total_bytes() const;  // stored bytes of all model tensors

 private:
  struct Entry {
    TensorFile* file = nullptr;
    std::string stored;  // its name in the file
    at::Tensor scale;    // float32 [1] or [rows] of this entry's rows: float8 x scale (undefined: read as stored)
    int64_t offset = 0;  // its first element in the stored tensor (a block of a split tensor; else 0)
    TensorInfo view;     // what info() shows: the stored tensor's, or the block's / squeezed shape and bytes
  };
  void add_file(std::shared_ptr<TensorFile> file, const NameMap* names);
  const Entry& entry(const std::string& name) const;

  std::string path_;
  std::vector<std::shared_ptr<TensorFile>> files_;
  std::map<std::string, Entry> entries_;  // by our name
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
