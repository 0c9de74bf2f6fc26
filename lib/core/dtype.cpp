#include "core/dtype.h"

#include <algorithm>

#include "core/error.h"

namespace omni {

c10::ScalarType parse_dtype(const std::string& name, const std::string& flag,
                            std::initializer_list<c10::ScalarType> allowed) {
  c10::ScalarType t = c10::ScalarType::Undefined;
  if (name == "float32" || name == "fp32") t = c10::kFloat;
  if (name == "bfloat16" || name == "bf16") t = c10::kBFloat16;
  if (name == "float16" || name == "fp16") t = c10::kHalf;
  const bool ok = t != c10::ScalarType::Undefined &&
                  (allowed.size() == 0 || std::find(allowed.begin(), allowed.end(), t) != allowed.end());
  if (!ok) {
    std::string names;
    for (auto a :
         allowed.size() ? allowed : std::initializer_list<c10::ScalarType>{c10::kFloat, c10::kBFloat16, c10::kHalf})
      names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
    OMNI_FAIL_USAGE(flag, " must be one of ", names, "; got '", name, "'");
  }
  return t;
}

const char* dtype_name(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat:
      return "float32";
    case c10::kBFloat16:
      return "bfloat16";
    case c10::kHalf:
      return "float16";
    default:
      return c10::toString(t);
  }
}

}  // namespace omni
