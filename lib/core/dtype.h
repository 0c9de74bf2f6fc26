// The dtype names of the command lines and config files ("float32", "bfloat16", "float16"), both ways.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

namespace omni {

// "float32" / "fp32", "bfloat16" / "bf16", "float16" / "fp16". Anything else, or a name not in `allowed`
// (a subset of {kFloat, kBFloat16, kHalf}; empty: all three), is a usage error naming `flag`.
c10::ScalarType parse_dtype(const std::string& name, const std::string& flag,
                            std::initializer_list<c10::ScalarType> allowed = {});

// "float32", "bfloat16", "float16" (what parse_dtype reads and diffusers' configs write as torch_dtype).
const char* dtype_name(c10::ScalarType t);

// `v` rounded to `t` (float32, bfloat16 or float16; other types: unchanged), as a tensor of `t` filled with `v`
// holds it: through float32, to nearest even.
double round_to_dtype(double v, c10::ScalarType t);

}  // namespace omni
