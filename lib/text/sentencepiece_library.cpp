#include "text/sentencepiece_library.h"

#include "core/error.h"

namespace omni::text {

SentencePieceLibrary::SentencePieceLibrary(std::initializer_list<const char*> names, const char* purpose)
    : library_(names), name_(*names.begin()), purpose_(purpose) {
  destroy_status_ = reinterpret_cast<void (*)(void*)>(library_.symbol("_ZN13sentencepiece4util6StatusD1Ev"));
  status_message_ = reinterpret_cast<const char* (*)(const void*)>(
      library_.symbol("_ZNK13sentencepiece4util6Status13error_messageEv"));
}

void SentencePieceLibrary::check() const {
  OMNI_CHECK(library_.ok() && destroy_status_ && status_message_, "cannot load ", name_, " (", purpose_,
             "): ", library_.error());
}

}  // namespace omni::text
