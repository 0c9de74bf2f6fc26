#include "hsdp/flat_param.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "core/fp8.h"

namespace omni::hsdp {

int64_t ParamSlot::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

at::Tensor BufferPool::acquire(at::ScalarType dtype, int64_t numel) {
  for (size_t i = 0; i < free_.size(); ++i) {
    if (free_[i].scalar_type() == dtype && free_[i].numel() == numel) {
      at::Tensor t = free_[i];
      free_.erase(free_.begin() + static_cast<long>(i));
      return t;
    }
  }
  drop_spares(free_.size());  // spares of other sizes would sit beside the new buffer (the class comment)
  ++allocations_;
  at::Tensor t = at::empty({numel}, at::TensorOptions().dtype(dtype).device(device_));
  held_bytes_ += t.nbytes();
  held_peak_bytes_ = std::max(held_peak_bytes_, held_bytes_);
  return t;
}

void BufferPool::release(at::Tensor buffer) {
  free_.push_back(std::move(buffer));
  if (free_.size() > kMaxFree) drop_spares(free_.size() - kMaxFree);
}

void BufferPool::drop_spares(size_t count) {
  for (size_t i = 0; i < count; ++i) held_bytes_ -= free_[i].nbytes();
  free_.erase(free_.begin(), free_.begin() + static_cast<long>(count));
}

FlatParamUnit::FlatParamUnit(std::string name, std::vector<ParamSlot> params, dist::ProcessGroup* group,
                             at::Device device)
    : name_(std::move(name)), group_(group), device_(device) {
  if (group_ != nullptr) {
    shard_size_ = group_->size();
    shard_rank_ = group_->rank();
  }
  // One flat buffer per dtype, parameters in registration order (the order every rank agrees on).
  for (auto& p : params) {
    Group* g = nullptr;
    for (auto& existing : groups_)
      if (existing.dtype == p.dtype) g = &existing;
    if (g == nullptr) {
      groups_.push_back(Group{});
      g = &groups_.back();
      g->dtype = p.dtype;
    }
    g->offsets.push_back(g->numel);
    g->numel += p.numel();
    g->params.push_back(std::move(p));
  }
  for (auto& g : groups_) g.padded = padded_numel(g.numel, shard_size_);
}

namespace {

// The part of a [rows, cols] row-major parameter at flat offset `off` that lies in the slice [begin, end), as
// row-aligned pieces (a partial first row, whole rows, a partial last row): fn(first row, rows, offset in the
// slice, columns of the piece). Each row of the parameter appears in at most one piece.
void for_each_row_piece(int64_t off, int64_t numel, int64_t cols, int64_t begin, int64_t end,
                        const std::function<void(int64_t, int64_t, int64_t, int64_t)>& fn) {
  int64_t a = std::max(begin, off) - off, b = std::min(end, off + numel) - off;  // [a, b) within the parameter
  if (a >= b) return;
  if (a % cols != 0) {  // partial first row
    const int64_t len = std::min(b, (a / cols + 1) * cols) - a;
    fn(a / cols, 1, off + a - begin, len);
    a += len;
  }
  if (b - a >= cols) {  // whole rows
    const int64_t rows = (b - a) / cols;
    fn(a / cols, rows, off + a - begin, cols);
    a += rows * cols;
  }
  if (a < b) fn(a / cols, 1, off + a - begin, b - a);  // partial last row
}

}  // namespace

at::Tensor FlatParamUnit::read_checked(const ShardReader& reader, const std::vector<std::string>& names, int64_t begin,
                                       int64_t count, at::ScalarType dtype) const {
  at::Tensor t = reader(names, begin, count, dtype);
  OMNI_CHECK(t.numel() == count && t.scalar_type() == dtype, "unit ", name_, ": shard reader returned ", t.numel(),
             " elements of ", t.scalar_type(), ", expected ", count, " of ", dtype);
  return t.to(at::kCPU).contiguous();
}

at::Tensor FlatParamUnit::float8_slice(Group& g, const ShardReader& reader, int64_t begin, int64_t count) {
  const int64_t end = begin + count;
  std::vector<int64_t> row_base(g.params.size());
  int64_t total_rows = 0;
  bool any_quantized = false;  // the same on every rank: it depends on the parameters, not on the slice
  for (size_t i = 0; i < g.params.size(); ++i) {
    const auto& p = g.params[i];
    OMNI_CHECK(p.shape.size() == 2 && p.scale, "unit ", name_, ": ", p.name,
               " is held in float8 but is not a [out, in] weight with a scale slot");
    OMNI_CHECK(!p.stored_scale.defined() ||
                   (p.stored_scale.scalar_type() == at::kFloat && p.stored_scale.numel() == p.shape[0]),
               "unit ", name_, ": ", p.name, ": stored float8 scales must be [", p.shape[0], "] float32");
    row_base[i] = total_rows;
    total_rows += p.shape[0];
    any_quantized = any_quantized || !p.stored_scale.defined();
  }
  // 1. The slice, read in runs of consecutive weights read alike: stored float8 bytes straight into `out`, or
  //    float32 values to quantize, kept per run (`parts`: no copy into a slice-sized buffer). The padding
  //    stays 0.
  auto out = at::zeros({count}, at::TensorOptions().dtype(at::kFloat8_e4m3fn));  // [slice]
  struct Part {
    int64_t at;         // its first element's position in the slice
    at::Tensor values;  // float32
  };
  std::vector<Part> parts;
  for (size_t i = 0; i < g.params.size();) {
    const bool stored = g.params[i].stored_scale.defined();
    std::vector<std::string> names;
    size_t j = i;
    for (; j < g.params.size() && g.params[j].stored_scale.defined() == stored; ++j) names.push_back(g.params[j].name);
    const int64_t run_begin = g.offsets[i], run_end = g.offsets[j - 1] + g.params[j - 1].numel();
    const int64_t lo = std::max(begin, run_begin), hi = std::min(end, run_end);
    if (hi > lo) {
      auto part = read_checked(reader, names, lo - run_begin, hi - lo, stored ? at::kFloat8_e4m3fn : at::kFloat);
      if (stored) {
        out.narrow(0, lo - begin, hi - lo).copy_(part);
      } else {
        parts.push_back({lo - begin, std::move(part)});
      }
    }
    i = j;
  }
  // A quantized weight's piece of the slice (it lies inside one run, so inside one part).
  auto values_at = [&](int64_t at, int64_t n) {
    for (const auto& p : parts)
      if (at >= p.at && at + n <= p.at + p.values.numel()) return p.values.narrow(0, at - p.at, n);
    OMNI_FAIL("unit ", name_, ": slice elements [", at, ", ", at + n, ") were not read");
  };
  // 2. The quantized weights' row scales: each row's largest magnitude over this slice, then over the shard
  //    group. Stored weights keep the file's.
  auto amax = at::zeros({total_rows}, at::kFloat);  // [rows]
  for (size_t i = 0; i < g.params.size(); ++i) {
    if (g.params[i].stored_scale.defined()) continue;
    const int64_t cols = g.params[i].shape[1];
    for_each_row_piece(g.offsets[i], g.params[i].numel(), cols, begin, end,
                       [&](int64_t row, int64_t rows, int64_t at, int64_t width) {
                         auto piece = values_at(at, rows * width).view({rows, width});  // [rows, width]
                         amax.narrow(0, row_base[i] + row, rows).copy_(piece.abs().amax(1));
                       });
  }
  if (any_quantized && shard_size_ > 1) {
    auto shared = amax.to(group_->device());
    group_->all_reduce(shared, dist::ReduceOp::kMax)->wait();
    amax = shared.to(at::kCPU);
  }
  auto scales = fp8::row_scales(amax);  // [rows] float32
  for (size_t i = 0; i < g.params.size(); ++i)
    if (g.params[i].stored_scale.defined())
      scales.narrow(0, row_base[i], g.params[i].shape[0]).copy_(g.params[i].stored_scale);
  // 3. The quantized weights' part of this slice in float8, in row chunks (bounded temporaries).
  for (size_t i = 0; i < g.params.size(); ++i) {
    if (g.params[i].stored_scale.defined()) continue;
    const int64_t cols = g.params[i].shape[1];
    for_each_row_piece(g.offsets[i], g.params[i].numel(), cols, begin, end,
                       [&](int64_t row, int64_t rows, int64_t at, int64_t width) {
                         auto piece = values_at(at, rows * width).view({rows, width});         // [rows, width]
                         auto scale = scales.narrow(0, row_base[i] + row, rows).unsqueeze(1);  // [rows, 1]
                         auto dst = out.narrow(0, at, rows * width).view({rows, width});       // [rows, width]
                         fp8::quantize_into(dst, piece, scale);
                       });
  }
  parts.clear();
  g.scales = device_.is_cpu() ? scales : scales.to(device_);
  for (size_t i = 0; i < g.params.size(); ++i) {
    *g.params[i].scale = g.scales.narrow(0, row_base[i], g.params[i].shape[0]);  // [out]
  }
  return out;
}

void FlatParamUnit::load_shard(const ShardReader& reader, HostToDevice* upload) {
  for (auto& g : groups_) {
    const int64_t per_rank = g.padded / shard_size_;
    at::Tensor slice;
    if (g.dtype == at::kFloat8_e4m3fn) {
      slice = float8_slice(g, reader, shard_rank_ * per_rank, per_rank);
    } else {
      std::vector<std::string> names;
      for (const auto& p : g.params) names.push_back(p.name);
      slice = read_checked(reader, names, shard_rank_ * per_rank, per_rank, g.dtype);
    }
    if (device_.is_cpu()) {
      g.shard = slice;
    } else {
      g.shard = upload ? upload->upload(slice) : slice.to(device_).contiguous();
    }
  }
}

void FlatParamUnit::start_gather(BufferPool& pool) {
  OMNI_CHECK(!gathered_ && !in_flight_, "unit ", name_, ": gather started twice");
  for (auto& g : groups_) {
    OMNI_CHECK(g.shard.defined(), "unit ", name_, ": gather before its shard was loaded");
    if (shard_size_ == 1) {
      g.full = g.shard;  // held whole: the slice is the buffer
      continue;
    }
    g.full = pool.acquire(g.dtype, g.padded);
    works_.push_back(group_->all_gather_into_flat(g.full, g.shard));
  }
  in_flight_ = true;
}

void FlatParamUnit::finish_gather() {
  OMNI_CHECK(in_flight_ && !gathered_, "unit ", name_, ": finish_gather without start_gather");
  dist::wait_all(works_);
  works_.clear();
  in_flight_ = false;
  for (auto& g : groups_) {
    for (size_t i = 0; i < g.params.size(); ++i) {
      const auto& p = g.params[i];
      *p.slot = g.full.narrow(0, g.offsets[i], p.numel()).view(p.shape);  // [numel] -> param shape
    }
  }
  gathered_ = true;
}

void FlatParamUnit::release(BufferPool& pool) {
  if (in_flight_) finish_gather();  // never free a buffer under a transfer
  for (auto& g : groups_) {
    for (const auto& p : g.params) *p.slot = at::Tensor();
    if (shard_size_ > 1 && g.full.defined()) pool.release(g.full);
    g.full = at::Tensor();
  }
  gathered_ = false;
}

int64_t FlatParamUnit::resident_bytes() const {
  int64_t b = 0;
  for (const auto& g : groups_) {
    if (g.shard.defined()) b += g.shard.numel() * static_cast<int64_t>(g.shard.element_size());
    if (g.scales.defined()) b += g.scales.numel() * static_cast<int64_t>(g.scales.element_size());
  }
  return b;
}

int64_t FlatParamUnit::full_bytes() const {
  int64_t b = 0;
  for (const auto& g : groups_) b += g.padded * static_cast<int64_t>(c10::elementSize(g.dtype));
  return b;
}

int64_t FlatParamUnit::received_bytes_per_gather() const {
  if (shard_size_ == 1) return 0;
  return full_bytes() - full_bytes() / shard_size_;
}

}  // namespace omni::hsdp
