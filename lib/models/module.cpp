#include "models/module.h"

#include <set>
#include <sstream>

#include "core/error.h"
#include "core/memory.h"
#include "io/safetensors.h"

namespace omni::models {

void Module::collect(const std::string& prefix, std::vector<ParamRef>& out) const {
  for (const auto& slot : params_)
    out.push_back({prefix + slot.name, slot.shape, slot.rule, slot.tensor.get(), slot.scale});
  for (const auto& [name, module] : children_) module->collect(prefix + name + ".", out);
}

int64_t Module::parameter_bytes() const {
  int64_t total = 0;
  for (const auto& p : parameters()) {
    if (p.tensor->defined()) total += p.tensor->numel() * static_cast<int64_t>(p.tensor->element_size());
  }
  return total;
}

at::Tensor& Module::param(const std::string& name, std::vector<int64_t> shape, ParamDtype rule) {
  params_.push_back({name, std::move(shape), rule, std::make_unique<at::Tensor>()});
  return *params_.back().tensor;
}

void Module::float8_capable(const at::Tensor& weight, at::Tensor& scale) {
  for (auto& slot : params_) {
    if (slot.tensor.get() == &weight) {
      OMNI_CHECK(slot.shape.size() == 2, "float8_capable: ", slot.name, " is not a [out, in] weight");
      slot.scale = &scale;
      return;
    }
  }
  OMNI_FAIL("float8_capable: the weight is not a parameter of this module");
}

at::ScalarType resolve_param_dtype(ParamDtype rule, at::ScalarType model_dtype) {
  return rule == ParamDtype::kFloat32 ? at::kFloat : model_dtype;
}

std::string shape_str(at::IntArrayRef shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {
std::string join_first(const std::vector<std::string>& names, size_t limit) {
  std::ostringstream os;
  for (size_t i = 0; i < names.size() && i < limit; ++i) os << (i ? ", " : "") << names[i];
  if (names.size() > limit) os << " (and " << names.size() - limit << " more)";
  return os.str();
}
}  // namespace

void check_state(const std::vector<ParamRef>& params, const io::Checkpoint& ckpt) {
  std::set<std::string> expected;
  std::vector<std::string> missing;
  for (const auto& p : params) {
    expected.insert(p.name);
    if (!ckpt.contains(p.name)) missing.push_back(p.name);
  }
  std::vector<std::string> unexpected;
  for (const auto& name : ckpt.names()) {
    if (!expected.count(name)) unexpected.push_back(name);
  }
  OMNI_CHECK_INPUT(missing.empty(), ckpt.path(), ": missing ", missing.size(),
                   " tensor(s) the model needs: ", join_first(missing, 8));
  OMNI_CHECK_INPUT(unexpected.empty(), ckpt.path(), ": ", unexpected.size(),
                   " unexpected tensor(s) no module claims: ", join_first(unexpected, 8));
  for (const auto& p : params) {
    const auto& info = ckpt.info(p.name);
    OMNI_CHECK_INPUT(info.shape == p.shape, info.file, ": tensor '", p.name, "' has shape ", shape_str(info.shape),
                     ", expected ", shape_str(p.shape));
  }
}

void load_state(const Module& root, const io::Checkpoint& ckpt, at::ScalarType model_dtype, const at::Device& device,
                const std::vector<std::string>& skip) {
  auto params = root.parameters();
  check_state(params, ckpt);
  std::set<std::string> skipped(skip.begin(), skip.end());
  // Through a pinned staging buffer to a GPU (the CPU keeps the tensors as read).
  HostToDevice upload(device);
  for (auto& p : params) {
    if (skipped.count(p.name)) continue;
    *p.tensor = upload.upload(ckpt.read(p.name, resolve_param_dtype(p.dtype_rule, model_dtype)));
  }
  upload.synchronize();  // the weights are in place when the model is
}

}  // namespace omni::models
