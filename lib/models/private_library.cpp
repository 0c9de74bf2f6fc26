#include "models/private_library.h"

#include <dlfcn.h>

#include "core/error.h"

namespace omni::models {

PrivateLibrary::PrivateLibrary(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (handle_ != nullptr) {
      error_.clear();
      return;
    }
    const char* why = ::dlerror();
    error_ += str_cat(error_.empty() ? "" : "; ", why ? why : name);
  }
}

void* PrivateLibrary::symbol(const char* name) {
  if (handle_ == nullptr) return nullptr;
  void* p = ::dlsym(handle_, name);
  if (p == nullptr) error_ += str_cat(error_.empty() ? "" : "; ", "symbol ", name, " not found");
  return p;
}

}  // namespace omni::models
