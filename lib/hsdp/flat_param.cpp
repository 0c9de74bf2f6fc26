#include "hsdp/flat_param.h"

#include "core/error.h"

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

void FlatParamUnit::load_shard(const ShardReader& reader) {
  for (auto& g : groups_) {
    std::vector<std::string> names;
    for (const auto& p : g.params) names.push_back(p.name);
    const int64_t per_rank = g.padded / shard_size_;
    at::Tensor slice = reader(names, shard_rank_ * per_rank, per_rank, g.dtype);
    OMNI_CHECK(slice.numel() == per_rank && slice.scalar_type() == g.dtype, "unit ", name_, ": shard reader returned ",
               slice.numel(), " elements of ", slice.scalar_type(), ", expected ", per_rank, " of ", g.dtype);
    g.shard = device_.is_cpu() ? slice.contiguous() : slice.to(device_).contiguous();
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
  for (const auto& g : groups_)
    if (g.shard.defined()) b += g.shard.numel() * static_cast<int64_t>(g.shard.element_size());
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
