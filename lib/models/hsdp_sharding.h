// Binds a model (a Module tree that is a root plus blocks) to the HSDP engine: every rank reads only its own
// slice of each unit straight from the checkpoint (converted to the unit's dtype on the way), so no rank ever
// materializes the whole model; the returned hooks gather and release units around the model's forward.
#pragma once

#include <memory>
#include <vector>

#include "dist/process_group.h"
#include "hsdp/hsdp_engine.h"
#include "models/module.h"

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

class LoraSet;

// `blocks` are the model's HSDP blocks in forward order (children of `model`); everything else in `model` is
// the root unit. Names and shapes are checked against `ckpt` first (missing / unexpected / wrong shape are
// input errors naming them). `shard_group` null or of size 1 holds every unit whole (still loaded through
// the same path, so the arithmetic is identical). `lora` (may be null) is merged into the weights as they are
// read: each rank merges into its own slice only.
std::unique_ptr<hsdp::ShardedModel> shard_model(const std::string& name, const Module& model,
                                                const std::vector<const Module*>& blocks, const io::Checkpoint& ckpt,
                                                dist::ProcessGroup* shard_group, at::ScalarType model_dtype,
                                                at::Device device, std::shared_ptr<hsdp::BufferPool> pool,
                                                std::shared_ptr<hsdp::HsdpStats> stats, const LoraSet* lora = nullptr);

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
