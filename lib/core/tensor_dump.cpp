#include "core/tensor_dump.h"

namespace omni::debug {
namespace {
bool g_enabled = false;
std::vector<std::string> g_scopes;
std::vector<std::pair<std::string, at::Tensor>> g_dumps;

std::string full_name(const std::string& name) {
  std::string out;
  for (const auto& s : g_scopes) out += s + ".";
  return out + name;
}
}  // namespace

void enable_dumps(bool on) {
  g_enabled = on;
}
bool dumps_enabled() {
  return g_enabled;
}

void dump(const std::string& name, const at::Tensor& tensor) {
  if (!g_enabled || !tensor.defined()) return;
  at::Tensor copy = tensor.detach().to(at::kCPU);
  if (at::isFloatingType(copy.scalar_type())) copy = copy.to(at::kFloat);
  copy = copy.contiguous().clone();
  const std::string key = full_name(name);
  for (auto& [k, v] : g_dumps) {
    if (k == key) {
      v = copy;
      return;
    }
  }
  g_dumps.emplace_back(key, copy);
}

std::vector<std::pair<std::string, at::Tensor>> take_dumps() {
  std::vector<std::pair<std::string, at::Tensor>> out;
  out.swap(g_dumps);
  return out;
}

DumpScope::DumpScope(const std::string& prefix) {
  if (g_enabled) g_scopes.push_back(prefix);
}
DumpScope::~DumpScope() {
  if (g_enabled && !g_scopes.empty()) g_scopes.pop_back();
}

}  // namespace omni::debug
