#include "models/hsdp_sharding.h"

#include <map>
#include <set>

#include "core/error.h"
#include "core/log.h"
#include "core/memory.h"
#include "io/safetensors.h"
#include "models/fp8_weights.h"
#include "models/lora.h"

namespace omni::models {
namespace {

// The unit's slots. A float8 weight the checkpoint stores in float8 is read as stored, with the file's scales,
// unless LoRA changes it as it is read (then it is merged in float32 and quantized like any other).
std::vector<hsdp::ParamSlot> slots_of(const std::vector<ParamRef>& params, at::ScalarType model_dtype,
                                      const WeightHolding& holding, int num_blocks, const io::Checkpoint& ckpt,
                                      const LoraSet* lora, hsdp::HsdpStats& stats) {
  std::vector<hsdp::ParamSlot> out;
  for (const auto& p : params) {
    const at::ScalarType held = held_dtype(p, model_dtype, holding, num_blocks);
    hsdp::ParamSlot slot{p.name, p.shape, held, p.tensor, nullptr, at::Tensor()};
    if (held == at::kFloat8_e4m3fn) {
      slot.scale = p.scale;
      if (holding.stored_float8.count(p.name) && !(lora != nullptr && lora->touches(p.name)))
        slot.stored_scale = ckpt.float8_row_scales(p.name);
      ++(slot.stored_scale.defined() ? stats.float8_weights_stored : stats.float8_weights_quantized);
    }
    out.push_back(std::move(slot));
  }
  return out;
}

}  // namespace

UnitParams split_units(const Module& model, const std::vector<const Module*>& blocks) {
  // By slot identity: a block's parameters are the slots its module registered.
  std::vector<std::set<const at::Tensor*>> block_slots(blocks.size());
  for (size_t b = 0; b < blocks.size(); ++b)
    for (const auto& p : blocks[b]->parameters()) block_slots[b].insert(p.tensor);
  UnitParams out;
  out.blocks.resize(blocks.size());
  for (const auto& p : model.parameters()) {
    bool placed = false;
    for (size_t b = 0; b < blocks.size() && !placed; ++b) {
      if (block_slots[b].count(p.tensor)) {
        out.blocks[b].push_back(p);
        placed = true;
      }
    }
    if (!placed) out.root.push_back(p);
  }
  return out;
}

UnitBytes unit_bytes(const std::vector<ParamRef>& params, at::ScalarType model_dtype, int shard_size,
                     const WeightHolding& holding, int num_blocks) {
  // FlatParamUnit's layout: one flat buffer per dtype, each padded to a multiple of the shard size; float8
  // weights add their float32 row scales, kept whole on every rank.
  std::map<at::ScalarType, int64_t> numel;
  UnitBytes out;
  for (const auto& p : params) {
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    const at::ScalarType held = held_dtype(p, model_dtype, holding, num_blocks);
    numel[held] += n;
    if (held == at::kFloat8_e4m3fn) out.resident += p.shape[0] * static_cast<int64_t>(sizeof(float));
  }
  for (const auto& [dtype, n] : numel) {
    const int64_t padded = hsdp::FlatParamUnit::padded_numel(n, shard_size);
    out.full += padded * static_cast<int64_t>(c10::elementSize(dtype));
    out.resident += padded / shard_size * static_cast<int64_t>(c10::elementSize(dtype));
  }
  return out;
}

std::unique_ptr<hsdp::ShardedModel> shard_model(const std::string& name, const Module& model,
                                                const std::vector<const Module*>& blocks, const io::Checkpoint& ckpt,
                                                dist::ProcessGroup* shard_group, at::ScalarType model_dtype,
                                                at::Device device, std::shared_ptr<hsdp::BufferPool> pool,
                                                std::shared_ptr<hsdp::HsdpStats> stats, const LoraSet* lora,
                                                const WeightHolding& holding) {
  const std::vector<ParamRef> all = model.parameters();
  check_state(all, ckpt);
  const WeightHolding held = with_stored_float8(holding, ckpt);
  const int num_blocks = numbered_blocks(all);

  UnitParams units_params = split_units(model, blocks);
  const std::vector<ParamRef>& root_params = units_params.root;
  const std::vector<std::vector<ParamRef>>& block_params = units_params.blocks;

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
  auto root = std::make_unique<hsdp::FlatParamUnit>(
      name + ".root", slots_of(root_params, model_dtype, held, num_blocks, ckpt, lora, *stats), shard_group, device);
  // Slices reach a GPU through one pinned staging buffer (core/memory.h), reused by every unit.
  HostToDevice upload(device);
  root->load_shard(reader, &upload);
  return_freed_host_memory();  // the read buffers: what stays is the slices (the memory plan's load phase)
  std::vector<std::unique_ptr<hsdp::FlatParamUnit>> units;
  for (size_t b = 0; b < blocks.size(); ++b) {
    units.push_back(std::make_unique<hsdp::FlatParamUnit>(
        name + ".block" + std::to_string(b),
        slots_of(block_params[b], model_dtype, held, num_blocks, ckpt, lora, *stats), shard_group, device));
    units.back()->load_shard(reader, &upload);
    return_freed_host_memory();
  }
  upload.synchronize();  // the staging buffer is free before the next model's load reuses the host memory
  auto sharded = std::make_unique<hsdp::ShardedModel>(name, std::move(root), std::move(units), pool, stats);
  stats->param_bytes_resident += sharded->resident_bytes();
  stats->disk_bytes_read += ckpt.bytes_read() - read_before;
  OMNI_DEBUG(name, ": ", blocks.size(), " blocks + root sharded ", shard_group ? shard_group->size() : 1,
             " ways; resident ", format_bytes(sharded->resident_bytes()), " of ", format_bytes(sharded->full_bytes()));
  return sharded;
}

}  // namespace omni::models
