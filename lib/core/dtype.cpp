#include "core/dtype.h"

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <vector>

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
    // The default list lives as long as the loop (a braced list's backing array would end with the ?: expression).
    static const std::vector<c10::ScalarType> kAll{c10::kFloat, c10::kBFloat16, c10::kHalf};
    const std::vector<c10::ScalarType> names_of = allowed.size() ? std::vector<c10::ScalarType>(allowed) : kAll;
    std::string names;
    for (auto a : names_of) names += (names.empty() ? "" : ", ") + std::string(dtype_name(a));
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

double round_to_dtype(double v, c10::ScalarType t) {
  const auto f = static_cast<float>(v);
  switch (t) {
    case c10::kFloat:
      return f;
    case c10::kBFloat16:
      return static_cast<float>(c10::BFloat16(f));
    case c10::kHalf:
      return static_cast<float>(c10::Half(f));
    default:
      return v;
  }
}

}  // namespace omni
