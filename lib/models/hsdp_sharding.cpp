#include "models/hsdp_sharding.h"

#include <set>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "io/safetensors.h"
#include "models/lora.h"

namespace omni::models {
namespace {

std::vector<hsdp::ParamSlot> slots_of(const std::vector<ParamRef>& params, at::ScalarType model_dtype) {
  std::vector<hsdp::ParamSlot> out;
  for (const auto& p : params)
    out.push_back({p.name, p.shape, resolve_param_dtype(p.dtype_rule, model_dtype), p.tensor});
  return out;
}

}  // namespace

std::unique_ptr<hsdp::ShardedModel> shard_model(const std::string& name, const Module& model,
                                                const std::vector<const Module*>& blocks, const io::Checkpoint& ckpt,
                                                dist::ProcessGroup* shard_group, at::ScalarType model_dtype,
                                                at::Device device, std::shared_ptr<hsdp::BufferPool> pool,
                                                std::shared_ptr<hsdp::HsdpStats> stats, const LoraSet* lora) {
  const std::vector<ParamRef> all = model.parameters();
  check_state(all, ckpt);

  // Split the model's parameters (full checkpoint names) into blocks and root by slot identity.
  std::vector<std::set<const at::Tensor*>> block_slots(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& p : blocks[b]->parameters()) block_slots[b].insert(p.tensor);
  std::vector<std::vector<ParamRef>> block_params(blocks.size());
  std::vector<ParamRef> root_params;
  for (const auto& p : all) {
    bool placed = false;
    for (size_t b = 0; b < blocks.size() && !placed; ++b) {
      if (block_slots[b].count(p.tensor)) {
        block_params[b].push_back(p);
        placed = true;
      }
    }
    if (!placed) root_params.push_back(p);
  }

  const int64_t read_before = ckpt.bytes_read();
  io::ReadAdjust merge_lora;
  if (lora != nullptr && !lora->empty()) {
    merge_lora.touches = [lora](const std::string& name) { return lora->touches(name); };
    merge_lora.add = [lora](const std::string& name, int64_t begin, at::Tensor& values) {
      lora->add_to(name, begin, values);
    };
  }
  const io::ReadAdjust* adjust = merge_lora.touches ? &merge_lora : nullptr;
  hsdp::ShardReader reader = [&ckpt, adjust](const std::vector<std::string>& names, int64_t begin, int64_t count,
                                             at::ScalarType dtype) {
    return ckpt.read_flat(names, begin, count, dtype, adjust);
  };
  auto root =
      std::make_unique<hsdp::FlatParamUnit>(name + ".root", slots_of(root_params, model_dtype), shard_group, device);
  root->load_shard(reader);
  std::vector<std::unique_ptr<hsdp::FlatParamUnit>> units;
  for (size_t b = 0; b < blocks.size(); ++b) {
    units.push_back(std::make_unique<hsdp::FlatParamUnit>(name + ".block" + std::to_string(b),
                                                          slots_of(block_params[b], model_dtype), shard_group, device));
    units.back()->load_shard(reader);
  }
  auto sharded = std::make_unique<hsdp::ShardedModel>(name, std::move(root), std::move(units), pool, stats);
  stats->param_bytes_resident += sharded->resident_bytes();
  stats->disk_bytes_read += ckpt.bytes_read() - read_before;
  OMNI_DEBUG(name, ": ", blocks.size(), " blocks + root sharded ", shard_group ? shard_group->size() : 1,
             " ways; resident ", format_bytes(sharded->resident_bytes()), " of ", format_bytes(sharded->full_bytes()));
  return sharded;
}

}  // namespace omni::models
