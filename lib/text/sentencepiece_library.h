// libsentencepiece (the tokenizer) and libsentencepiece_train (generator/: the trainer), opened privately and
// called through symbols found by their mangled names, never linked.
//
// Debian's libsentencepiece.so.0 carries its own protobuf-lite (3.14) and exports those symbols (1602 of them),
// and the PyPI wheel's libtorch_cpu.so exports the protobuf it bundles too (232 google::protobuf symbols in
// torch 2.11; checked with nm -D). Linked normally, or opened into the global scope, the copies bind to each
// other's symbols: two protobuf versions sharing one set of globals (the crash in protobuf's static
// initializers and version check that Debian's LibTorch, linked to libprotobuf.so.32, showed). So each library
// is opened with RTLD_LOCAL | RTLD_DEEPBIND (PrivateLibrary): still needed with the PyPI LibTorch. Every other
// call is virtual and goes through an object's vtable, so nothing references a SentencePiece symbol at link
// time; only the headers are used.
#pragma once

#include <sentencepiece_processor.h>

#include <initializer_list>
#include <new>
#include <string>

#include "text/private_library.h"

namespace omni::text {

class SentencePieceLibrary {
 public:
  // Opens the first of `names` that exists; `purpose` ("the UMT5 tokenizer needs it") completes the error of
  // a missing library or symbol.
  SentencePieceLibrary(std::initializer_list<const char*> names, const char* purpose);

  // The address of a mangled `symbol`; null when missing, which check() then reports.
  void* symbol(const char* mangled) { return library_.symbol(mangled); }
  // Throws, naming the library and `purpose`, unless the library and every symbol asked for so far were found.
  void check() const;

  // Runs `call`, which returns a sentencepiece::util::Status by value, and returns its error message ("" when
  // ok). The status is built in local storage (guaranteed copy elision) and destroyed through the library's
  // own destructor.
  template <typename Call>
  std::string status_error(Call&& call) const {
    alignas(sentencepiece::util::Status) unsigned char storage[sizeof(sentencepiece::util::Status)];
    auto* status = new (storage) sentencepiece::util::Status(call());
    std::string message;
    if (!status->ok()) {
      const char* m = status_message_(status);
      message = m && *m ? m : "unknown SentencePiece error";
    }
    destroy_status_(status);
    return message;
  }

 private:
  PrivateLibrary library_;
  std::string name_;
  std::string purpose_;
  void (*destroy_status_)(void* status) = nullptr;               // util::Status::~Status()
  const char* (*status_message_)(const void* status) = nullptr;  // util::Status::error_message() const
};

}  // namespace omni::text
