// A shared library opened privately: dlopen(RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND), so that its symbols stay
// out of the global scope and it binds to its own dependencies first. This is how SentencePiece is used
// (text/sentencepiece_library.h has why).
#pragma once

#include <initializer_list>
#include <string>

namespace omni::text {

class PrivateLibrary {
 public:
  // Tries `names` in order; the first that opens is kept (never closed: objects from it may live until exit).
  explicit PrivateLibrary(std::initializer_list<const char*> names);

  // The address of `symbol`, or null (the miss is recorded in error()).
  void* symbol(const char* symbol);
  // Empty when the library opened and every symbol asked for was found.
  const std::string& error() const { return error_; }
  bool ok() const { return handle_ != nullptr && error_.empty(); }

 private:
  void* handle_ = nullptr;
  std::string error_;
};

}  // namespace omni::text
