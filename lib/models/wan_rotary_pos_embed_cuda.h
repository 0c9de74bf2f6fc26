// The CUDA kernel of apply_rotary_emb (models/wan_rotary_pos_embed.h), behind a plain-C++ launcher so that
// nvcc compiles no LibTorch header. Built only with OMNI_WITH_CUDA.
#pragma once

#include <cstdint>

namespace omni::models::cuda {

enum class RopeDtype { kFloat32, kBFloat16, kFloat16 };

// out[row, 2i], out[row, 2i+1] for rows = batch * seq * heads rows of 2 * half channels, token of a row =
// (row / heads) % seq; cos / sin [seq, half] float32. x and out contiguous, of `dtype`. Enqueued on `stream`
// (a cudaStream_t). Returns the launch's cudaError_t (0: success), or minus the error an earlier kernel left pending.
int launch_rotary(RopeDtype dtype, const void* x, void* out, const float* cos, const float* sin, int64_t rows,
                  int64_t seq, int64_t heads, int64_t half, void* stream);

}  // namespace omni::models::cuda
