// apply_rotary_emb on CUDA: one thread per channel pair. __fmul_rn / __fsub_rn / __fadd_rn keep nvcc from
// contracting x1 * c - x2 * s into a fused multiply-add, so each product and sum is rounded to float32 as
// diffusers' separate kernels round them.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "models/wan_rotary_pos_embed_cuda.h"

namespace omni::models::cuda {

namespace {

__device__ inline float load(const float* p) {
  return *p;
}
__device__ inline float load(const __nv_bfloat16* p) {
  return __bfloat162float(*p);
}
__device__ inline float load(const __half* p) {
  return __half2float(*p);
}
__device__ inline void store(float* p, float v) {
  *p = v;
}
__device__ inline void store(__nv_bfloat16* p, float v) {
  *p = __float2bfloat16_rn(v);
}
__device__ inline void store(__half* p, float v) {
  *p = __float2half_rn(v);
}

// I: the index type. 32-bit wherever the elements fit (every real size: 720p x 81 at batch 2 is ~0.8e9), where
// the three divisions per pair cost a fraction of 64-bit ones.
template <typename T, typename I>
__global__ void rotary_kernel(const T* __restrict__ x, T* __restrict__ out, const float* __restrict__ cos,
                              const float* __restrict__ sin, I pairs, I seq, I heads, I half) {
  for (I p = blockIdx.x * static_cast<I>(blockDim.x) + threadIdx.x; p < pairs;
       p += static_cast<I>(gridDim.x) * blockDim.x) {
    const I row = p / half, i = p % half;
    const I s = (row / heads) % seq;
    const float x1 = load(x + 2 * p), x2 = load(x + 2 * p + 1);
    const float c = cos[s * half + i], sn = sin[s * half + i];
    store(out + 2 * p, __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, sn)));
    store(out + 2 * p + 1, __fadd_rn(__fmul_rn(x1, sn), __fmul_rn(x2, c)));
  }
}

template <typename T>
int launch(const void* x, void* out, const float* cos, const float* sin, int64_t rows, int64_t seq, int64_t heads,
           int64_t half, cudaStream_t stream) {
  const int64_t pairs = rows * half;
  if (pairs == 0) return 0;
  const int threads = 256;
  const int64_t blocks = (pairs + threads - 1) / threads;
  const unsigned grid = static_cast<unsigned>(blocks < 65535 * 32 ? blocks : 65535 * 32);
  // An error left by an earlier kernel is not this one's: report it as such (the caller names RoPE otherwise).
  if (const cudaError_t before = cudaGetLastError(); before != cudaSuccess) return -static_cast<int>(before);
  // 32-bit indices while 2 * pairs and the grid-stride step cannot overflow them.
  const int64_t largest = 2 * pairs + static_cast<int64_t>(grid) * threads;
  if (largest < INT32_MAX) {
    rotary_kernel<T, int32_t><<<grid, threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), cos, sin,
                                                            static_cast<int32_t>(pairs), static_cast<int32_t>(seq),
                                                            static_cast<int32_t>(heads), static_cast<int32_t>(half));
  } else {
    rotary_kernel<T, int64_t><<<grid, threads, 0, stream>>>(static_cast<const T*>(x), static_cast<T*>(out), cos, sin,
                                                            pairs, seq, heads, half);
  }
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

int launch_rotary(RopeDtype dtype, const void* x, void* out, const float* cos, const float* sin, int64_t rows,
                  int64_t seq, int64_t heads, int64_t half, void* stream) {
  auto s = static_cast<cudaStream_t>(stream);
  switch (dtype) {
    case RopeDtype::kFloat32:
      return launch<float>(x, out, cos, sin, rows, seq, heads, half, s);
    case RopeDtype::kBFloat16:
      return launch<__nv_bfloat16>(x, out, cos, sin, rows, seq, heads, half, s);
    case RopeDtype::kFloat16:
      return launch<__half>(x, out, cos, sin, rows, seq, heads, half, s);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace omni::models::cuda
