#include "text/private_library.h"

#include <dlfcn.h>

#include "core/error.h"

namespace omni::text {
namespace {

#if defined(__SANITIZE_ADDRESS__)
// AddressSanitizer refuses RTLD_DEEPBIND (google/sanitizers#611): a sanitizer build (-DOMNI_SANITIZE=ON) binds
// the library through the global scope instead, which is what a clash with LibTorch's symbols would show.
constexpr int kDeepBind = 0;
#else
constexpr int kDeepBind = RTLD_DEEPBIND;
#endif

}  // namespace

PrivateLibrary::PrivateLibrary(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    handle_ = ::dlopen(name, RTLD_NOW | RTLD_LOCAL | kDeepBind);
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

}  // namespace omni::text
