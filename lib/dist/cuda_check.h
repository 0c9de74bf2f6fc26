// CUDA_CHECK and NCCL_CHECK: the failing call and the library's own error text, as an omni::Error (exit 1),
// matching MPI_CHECK in dist/mpi_check.h. Only for builds with OMNI_WITH_NCCL (CUDA runtime and NCCL headers).
#pragma once

#ifdef OMNI_WITH_NCCL

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/error.h"

#define CUDA_CHECK(call)                                                                                           \
  do {                                                                                                             \
    cudaError_t omni_cuda_rc_ = (call);                                                                            \
    if (omni_cuda_rc_ != cudaSuccess)                                                                              \
      ::omni::throw_error(::omni::ExitCode::kFailure, __FILE__, __LINE__,                                          \
                          ::omni::str_cat("CUDA call ", #call, " failed: ", cudaGetErrorName(omni_cuda_rc_), ": ", \
                                          cudaGetErrorString(omni_cuda_rc_)));                                     \
  } while (0)

// ncclGetLastError (NCCL >= 2.13) adds NCCL's detail (which peer, which transport) to the result string.
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 13, 0)
#define OMNI_NCCL_LAST_ERROR() ncclGetLastError(nullptr)
#else
#define OMNI_NCCL_LAST_ERROR() "no detail before NCCL 2.13"
#endif
#define NCCL_CHECK(call)                                                                                             \
  do {                                                                                                               \
    ncclResult_t omni_nccl_rc_ = (call);                                                                             \
    if (omni_nccl_rc_ != ncclSuccess)                                                                                \
      ::omni::throw_error(::omni::ExitCode::kFailure, __FILE__, __LINE__,                                            \
                          ::omni::str_cat("NCCL call ", #call, " failed: ", ncclGetErrorString(omni_nccl_rc_), " (", \
                                          OMNI_NCCL_LAST_ERROR(), ")"));                                             \
  } while (0)

#endif  // OMNI_WITH_NCCL
