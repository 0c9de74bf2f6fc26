// Binds a model (a Module tree that is a root plus blocks) to the HSDP engine: every rank reads only its own
// slice of each unit straight from the checkpoint (converted to the unit's dtype on the way), so no rank ever
// materializes the whole model; the returned hooks gather and release units around the model's forward.
#pragma once

#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "hsdp/hsdp_engine.h"
#include "models/fp8_weights.h"
#include "models/module.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

class LoraSet;

// The HSDP blocks of a model (WanTransformer3DModel, Umt5Encoder: anything with num_blocks() and block(i)), in
// forward order.
template <typename Model>
std::vector<const Module*> blocks_of(const Model& m) {
  std::vector<const Module*> out;
  for (int i = 0; i < m.num_blocks(); ++i) out.push_back(&m.block(i));
  return out;
}

// A model's parameters split into HSDP units: the root (everything outside `blocks`) and each block's, in
// registration order. One rule for loading (shard_model) and for the memory plan.
struct UnitParams {
  std::vector<ParamRef> root;
  std::vector<std::vector<ParamRef>> blocks;
};
UnitParams split_units(const Module& model, const std::vector<const Module*>& blocks);

// Bytes of one unit (its parameters in the dtypes they are held in for `model_dtype` and `holding`, in a model
// of `num_blocks` blocks) on one rank of a shard group of `shard_size`: `resident` its slice (and float8 row
// scales), `full` the gathered buffer (padding included).
struct UnitBytes {
  int64_t resident = 0;
  int64_t full = 0;
};
UnitBytes unit_bytes(const std::vector<ParamRef>& params, at::ScalarType model_dtype, int shard_size,
                     const WeightHolding& holding = {}, int num_blocks = 0);

// `blocks` are the model's HSDP blocks in forward order (children of `model`); everything else in `model` is
// the root unit. Names and shapes are checked against `ckpt` first (missing / unexpected / wrong shape are
// input errors naming them). `shard_group` null or of size 1 holds every unit whole (still loaded through
// the same path, so the arithmetic is identical). `lora` (may be null) is merged into the weights as they are
// read: each rank merges into its own slice only. `holding`: which Linear weights are held in float8
// (fp8_weights.h), quantized as each rank reads its slice; those `ckpt` stores in float8 are held in float8 too,
// read as stored with the file's scales (quantized after merging where LoRA changes them). The counts go to
// `stats` (float8_weights_stored / _quantized).
std::unique_ptr<hsdp::ShardedModel> shard_model(const std::string& name, const Module& model,
                                                const std::vector<const Module*>& blocks, const io::Checkpoint& ckpt,
                                                dist::ProcessGroup* shard_group, at::ScalarType model_dtype,
                                                at::Device device, std::shared_ptr<hsdp::BufferPool> pool,
                                                std::shared_ptr<hsdp::HsdpStats> stats, const LoraSet* lora = nullptr,
                                                const WeightHolding& holding = {});

// UnitHooks over a ShardedModel (null: no-op).
class HsdpHooks : public UnitHooks {
 public:
  explicit HsdpHooks(hsdp::ShardedModel* model) : model_(model) {}
  void before(int unit) override {
    if (model_) model_->before(unit);
  }
  void after(int unit) override {
    if (model_) model_->after(unit);
  }
  void skip(int unit) override {
    if (model_) model_->skip(unit);
  }

 private:
  hsdp::ShardedModel* model_;
};

}  // namespace omni::models
