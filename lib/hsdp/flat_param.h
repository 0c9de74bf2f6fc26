// One HSDP unit (a transformer block, a UMT5 block, or a model's root): its parameters live in flat buffers,
// one per dtype, padded to a multiple of the shard size; this rank keeps only its contiguous slice. Before the
// unit runs, the slices are all-gathered into a reusable full buffer and the parameter slots are pointed at
// views of it; after, the slots are emptied and the buffer goes back to the pool (docs/DESIGN.md section 4).
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/memory.h"
#include "dist/process_group.h"

namespace omni::hsdp {

// A parameter the unit owns: its checkpoint name, shape, the dtype it is held in, and the slot the model
// reads it from (a tensor the model's forward uses; HSDP assigns views into the gathered buffer).
struct ParamSlot {
  std::string name;
  std::vector<int64_t> shape;
  at::ScalarType dtype;  // float8_e4m3fn: one float32 scale per row into *scale
  at::Tensor* slot;
  at::Tensor* scale = nullptr;  // float8 weights: their scale slot, [rows] float32
  // Float8 weights stored in float8 (fp8_scaled files): their [rows] float32 scales; the reader gives their
  // bytes as stored. Undefined: the weight is read in float32 and quantized at load.
  at::Tensor stored_scale;
  int64_t numel() const;
};

// Fills this rank's slice: elements [begin, begin + count) of the concatenation of the flattened tensors
// `names` (in order), converted to `dtype`, as a 1-D tensor of `count` elements; zero past the end. Float8
// groups ask for float32 values and quantize them, or, for weights with a stored_scale, for float8_e4m3fn: the
// stored bytes.
using ShardReader = std::function<at::Tensor(const std::vector<std::string>& names, int64_t begin, int64_t count,
                                             at::ScalarType dtype)>;

// Reusable full-size buffers, keyed by (dtype, elements); a released buffer is handed to the next unit of the
// same size, so a model of equal blocks allocates nothing in the steady state. At most kMaxFree spare buffers
// are kept (the oldest go first): enough for a root and two blocks of two dtypes each (a bfloat16 model keeps
// norms and modulation tables in float32), i.e. everything one forward has live at once. A miss drops every
// spare before allocating, so spares of other sizes (float8 middle blocks beside run-dtype first and last
// ones) never add to the units in use: a forward holds at most its root and two consecutive blocks.
class BufferPool {
 public:
  static constexpr size_t kMaxFree = 8;

  explicit BufferPool(at::Device device) : device_(device) {}
  const at::Device& device() const { return device_; }
  at::Tensor acquire(at::ScalarType dtype, int64_t numel);
  void release(at::Tensor buffer);
  // Drops every spare buffer (e.g. after the text encoder, whose buffers no later forward reuses).
  void clear() { drop_spares(free_.size()); }
  int64_t allocations() const { return allocations_; }  // buffers allocated so far (not served from the pool)
  // Bytes of the buffers the pool made and has not dropped (in use and spare), and their most: what the
  // memory plan's gathered peak must cover.
  int64_t held_bytes() const { return held_bytes_; }
  int64_t held_peak_bytes() const { return held_peak_bytes_; }

 private:
  void drop_spares(size_t count);  // the `count` oldest spares

  at::Device device_;
  std::vector<at::Tensor> free_;
  int64_t allocations_ = 0;
  int64_t held_bytes_ = 0;
  int64_t held_peak_bytes_ = 0;
};

class FlatParamUnit {
 public:
  // Elements of one dtype's flat buffer: `numel` padded up to a multiple of `shard_size` (each rank's slice
  // is padded / shard_size). The memory plan sizes units with it before any exists.
  static int64_t padded_numel(int64_t numel, int shard_size) {
    return (numel + shard_size - 1) / shard_size * shard_size;
  }

  // `group` is the shard group (nullptr or size 1: the unit is held whole, nothing is gathered).
  FlatParamUnit(std::string name, std::vector<ParamSlot> params, dist::ProcessGroup* group, at::Device device);

  const std::string& name() const { return name_; }
  // Reads this rank's slice of every dtype group through `reader` (only those elements are read). A float8
  // group's weights are quantized per row: each rank takes the largest magnitude of each row over its own
  // slice, one all-reduce (max) over the shard group completes them, and each rank quantizes its slice with
  // the scales (core/fp8.h). Weights with a stored_scale are read as stored and keep those scales (no
  // all-reduce when every weight of the group is). The scales, [rows] float32 per weight, are small and kept
  // whole on every rank.
  // `upload` (may be null: plain copies) carries the slices to a CUDA device through its pinned staging
  // buffer; the caller synchronizes it once every unit is loaded.
  void load_shard(const ShardReader& reader, HostToDevice* upload = nullptr);
  // Starts the all-gather of every dtype group into pool buffers; returns at once (the transfer overlaps).
  void start_gather(BufferPool& pool);
  // Waits for the gather and points every parameter slot at its view of the full buffer.
  void finish_gather();
  // Empties the slots and returns the full buffers to the pool.
  void release(BufferPool& pool);
  // Started and not yet finished (shard 1 too, where nothing moves: the state machine is the same).
  bool gathering() const { return in_flight_; }
  bool gathered() const { return gathered_; }

  int64_t resident_bytes() const;  // bytes of this rank's slices
  int64_t full_bytes() const;      // bytes of the gathered (padded) buffers
  // Bytes this rank receives from the others in one gather: full - own slice.
  int64_t received_bytes_per_gather() const;

 private:
  struct Group {  // the parameters of one dtype
    at::ScalarType dtype;
    std::vector<ParamSlot> params;
    std::vector<int64_t> offsets;  // element offset of each parameter in the flat buffer
    int64_t numel = 0;             // unpadded
    int64_t padded = 0;            // multiple of the shard size
    at::Tensor shard;              // [padded / shard_size], this rank's slice
    at::Tensor full;               // [padded] while gathered
    at::Tensor scales;             // float8 groups: every weight's row scales, [total rows] float32
  };
  // reader(...) checked for `count` elements of `dtype`, on the CPU, contiguous.
  at::Tensor read_checked(const ShardReader& reader, const std::vector<std::string>& names, int64_t begin,
                          int64_t count, at::ScalarType dtype) const;
  // A float8 group's slice [begin, begin + count): stored weights' bytes, the others quantized; the row scales
  // set.
  at::Tensor float8_slice(Group& g, const ShardReader& reader, int64_t begin, int64_t count);

  std::string name_;
  dist::ProcessGroup* group_;
  int shard_size_ = 1;
  int shard_rank_ = 0;
  at::Device device_;
  std::vector<Group> groups_;
  std::vector<dist::WorkHandle> works_;
  bool in_flight_ = false;
  bool gathered_ = false;
};

}  // namespace omni::hsdp
