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
  ++allocations_;
  return at::empty({numel}, at::TensorOptions().dtype(dtype).device(device_));
}

void BufferPool::release(at::Tensor buffer) {
  free_.push_back(std::move(buffer));
  if (free_.size() > kMaxFree) free_.erase(free_.begin());
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

at::Tensor FlatParamUnit::quantize_slice(Group& g, const at::Tensor& values, int64_t begin) {
  const int64_t end = begin + values.numel();
  std::vector<int64_t> row_base(g.params.size());
  int64_t total_rows = 0;
  for (size_t i = 0; i < g.params.size(); ++i) {
    OMNI_CHECK(g.params[i].shape.size() == 2 && g.params[i].scale, "unit ", name_, ": ", g.params[i].name,
               " is held in float8 but is not a [out, in] weight with a scale slot");
    row_base[i] = total_rows;
    total_rows += g.params[i].shape[0];
  }
  // 1. Each row's largest magnitude over this slice, then over the shard group.
  auto amax = at::zeros({total_rows}, at::kFloat);  // [rows]
  for (size_t i = 0; i < g.params.size(); ++i) {
    const int64_t cols = g.params[i].shape[1];
    for_each_row_piece(g.offsets[i], g.params[i].numel(), cols, begin, end,
                       [&](int64_t row, int64_t rows, int64_t at, int64_t width) {
                         auto piece = values.narrow(0, at, rows * width).view({rows, width});  // [rows, width]
                         amax.narrow(0, row_base[i] + row, rows).copy_(piece.abs().amax(1));
                       });
  }
  if (shard_size_ > 1) {
    auto shared = amax.to(group_->device());
    group_->all_reduce(shared, dist::ReduceOp::kMax)->wait();
    amax = shared.to(at::kCPU);
  }
  const auto scales = fp8::row_scales(amax);  // [rows] float32
  // 2. This slice in float8; the padding past the last weight stays 0.
  auto out = at::zeros({values.numel()}, at::TensorOptions().dtype(at::kFloat8_e4m3fn));  // [slice]
  for (size_t i = 0; i < g.params.size(); ++i) {
    const int64_t cols = g.params[i].shape[1];
    for_each_row_piece(g.offsets[i], g.params[i].numel(), cols, begin, end,
                       [&](int64_t row, int64_t rows, int64_t at, int64_t width) {
                         auto piece = values.narrow(0, at, rows * width).view({rows, width});  // [rows, width]
                         auto scale = scales.narrow(0, row_base[i] + row, rows).unsqueeze(1);  // [rows, 1]
                         out.narrow(0, at, rows * width).view({rows, width}).copy_(fp8::quantize(piece, scale));
                       });
  }
  g.scales = device_.is_cpu() ? scales : scales.to(device_);
  for (size_t i = 0; i < g.params.size(); ++i) {
    *g.params[i].scale = g.scales.narrow(0, row_base[i], g.params[i].shape[0]);  // [out]
  }
  return out;
}

void FlatParamUnit::load_shard(const ShardReader& reader, HostToDevice* upload) {
  for (auto& g : groups_) {
    std::vector<std::string> names;
    for (const auto& p : g.params) names.push_back(p.name);
    const int64_t per_rank = g.padded / shard_size_;
    const bool float8 = g.dtype == at::kFloat8_e4m3fn;
    const at::ScalarType read_as = float8 ? at::kFloat : g.dtype;
    at::Tensor slice = reader(names, shard_rank_ * per_rank, per_rank, read_as);
    OMNI_CHECK(slice.numel() == per_rank && slice.scalar_type() == read_as, "unit ", name_, ": shard reader returned ",
               slice.numel(), " elements of ", slice.scalar_type(), ", expected ", per_rank, " of ", read_as);
    if (float8) slice = quantize_slice(g, slice.to(at::kCPU).contiguous(), shard_rank_ * per_rank);
    if (device_.is_cpu()) {
      g.shard = slice.contiguous();
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
