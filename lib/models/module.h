// A minimal module tree whose paths are the checkpoint's weight names (stable-diffusion.cpp's convention).
//
// Components register parameters and children under their checkpoint keys; load_state() then fills every
// parameter from a Checkpoint and rejects missing, unexpected and wrongly shaped tensors by name. HSDP (and
// anything else) reaches the parameters through collect(), whose tensor pointers stay valid for the
// module's lifetime, so a unit's parameters can be re-pointed at views of a gathered flat buffer.
#pragma once

#include <ATen/ATen.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace omni::io {
class Checkpoint;
}

namespace omni::models {

// Where a parameter's dtype comes from: the model's compute dtype, or float32 always (diffusers'
// _keep_in_fp32_modules: modulation tables, time embedder, norms).
enum class ParamDtype { kModel, kFloat32 };

struct ParamRef {
  std::string name;            // full dotted checkpoint name
  std::vector<int64_t> shape;  // expected shape
  ParamDtype dtype_rule;
  at::Tensor* tensor;  // storage slot; undefined until loaded or initialized
  // A Linear weight that may be held in float8 (--weight-dtype float8_e4m3fn): the slot its per-output-channel
  // float32 scale [out] goes to. Null for every other parameter.
  at::Tensor* scale = nullptr;
};

class Module {
 public:
  Module() = default;
  virtual ~Module() = default;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // Appends every parameter of this module and its children, names prefixed with `prefix` ("" or "a.b.").
  void collect(const std::string& prefix, std::vector<ParamRef>& out) const;
  std::vector<ParamRef> parameters() const {
    std::vector<ParamRef> out;
    collect("", out);
    return out;
  }
  // The parameters whose names start with none of `prefixes`: a model's root unit, what its blocks leave.
  std::vector<ParamRef> parameters_except(const std::vector<std::string>& prefixes) const {
    std::vector<ParamRef> out;
    for (auto& p : parameters()) {
      bool inside = false;
      for (const auto& prefix : prefixes) inside = inside || p.name.compare(0, prefix.size(), prefix) == 0;
      if (!inside) out.push_back(p);
    }
    return out;
  }
  // Total bytes of all parameters as currently held (0 for unloaded slots).
  int64_t parameter_bytes() const;

 protected:
  // Registers a parameter slot under `name` (relative to this module) with the shape the checkpoint must have.
  at::Tensor& param(const std::string& name, std::vector<int64_t> shape, ParamDtype rule = ParamDtype::kModel);
  // Marks the registered parameter `weight` (a Linear's [out, in] weight) as one that may be held in float8,
  // its scale in `scale`.
  void float8_capable(const at::Tensor& weight, at::Tensor& scale);
  // Registers a child module under `name`; returns a raw pointer owned by this module.
  template <typename M>
  M* child(const std::string& name, std::unique_ptr<M> module) {
    M* raw = module.get();
    children_.emplace_back(name, std::move(module));
    return raw;
  }

 private:
  struct Slot {
    std::string name;
    std::vector<int64_t> shape;
    ParamDtype rule;
    std::unique_ptr<at::Tensor> tensor;  // heap slot so that pointers survive vector growth
    at::Tensor* scale = nullptr;         // ParamRef::scale
  };
  std::vector<Slot> params_;
  std::vector<std::pair<std::string, std::unique_ptr<Module>>> children_;
};

// Called around each HSDP unit while a forward runs. Models are a root unit (index kRootUnit: embeddings,
// heads, tables; everything that is not a block) plus blocks 0..N-1. A model calls before(kRootUnit) at the
// start of forward and after(kRootUnit) at the end, and before(i) / after(i) around block i, in order. HSDP
// gathers a unit's parameters in before() (and prefetches the next) and releases them in after(); without
// HSDP the hooks are null and nothing happens.
struct UnitHooks {
  static constexpr int kRootUnit = -1;
  virtual ~UnitHooks() = default;
  virtual void before(int unit) {}
  virtual void after(int unit) {}
  // Unit `unit` will not run in this forward after all (the step cache skipped the remaining blocks): HSDP
  // completes and releases the prefetch it may have started for it.
  virtual void skip(int unit) {}
};

// The dtype a parameter is held in under `model_dtype`.
at::ScalarType resolve_param_dtype(ParamDtype rule, at::ScalarType model_dtype);

// Fills every parameter of `root` from `ckpt` (converted to its resolved dtype, on `device`). The set of
// names must equal the checkpoint's exactly: missing, unexpected (names of the checkpoint no parameter
// claims) and wrongly shaped tensors are input errors that list the names and the checkpoint path.
// `skip` lists parameter names that are loaded elsewhere (HSDP shards): they are checked for presence and
// shape but not read.
void load_state(const Module& root, const io::Checkpoint& ckpt, at::ScalarType model_dtype,
                const at::Device& device = at::kCPU, const std::vector<std::string>& skip = {});

// Verifies names and shapes of `params` against `ckpt` without reading data (same errors as load_state).
void check_state(const std::vector<ParamRef>& params, const io::Checkpoint& ckpt);

std::string shape_str(at::IntArrayRef shape);

}  // namespace omni::models
