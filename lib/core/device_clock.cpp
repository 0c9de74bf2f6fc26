#include "core/device_clock.h"

#include "core/error.h"

#ifdef OMNI_WITH_CUDA
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace omni {

class DeviceClock::Mark {
 public:
  std::chrono::steady_clock::time_point host{};
#ifdef OMNI_WITH_CUDA
  cudaEvent_t event = nullptr;
  int device = -1;
  ~Mark() {
    if (event) cudaEventDestroy(event);
  }
#endif
};

namespace {
#ifdef OMNI_WITH_CUDA
void cuda_check(cudaError_t rc, const char* what) {
  OMNI_CHECK(rc == cudaSuccess, "CUDA call ", what, " failed: ", cudaGetErrorName(rc), ": ", cudaGetErrorString(rc));
}
#endif
}  // namespace

DeviceClock::MarkPtr DeviceClock::mark() const {
  auto m = std::make_shared<Mark>();
#ifdef OMNI_WITH_CUDA
  if (device_.is_cuda()) {
    m->device = device_.has_index() ? device_.index() : c10::cuda::current_device();
    cuda_check(cudaEventCreate(&m->event), "cudaEventCreate");
    const auto stream = c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(m->device));
    cuda_check(cudaEventRecord(m->event, stream.stream()), "cudaEventRecord");
    return m;
  }
#endif
  m->host = std::chrono::steady_clock::now();
  return m;
}

bool DeviceClock::reached(const MarkPtr& m) {
#ifdef OMNI_WITH_CUDA
  if (m->event) {
    const cudaError_t rc = cudaEventQuery(m->event);
    if (rc == cudaErrorNotReady) return false;
    cuda_check(rc, "cudaEventQuery");
  }
#endif
  return true;
}

double DeviceClock::seconds(const MarkPtr& from, const MarkPtr& to) {
#ifdef OMNI_WITH_CUDA
  OMNI_CHECK((from->event == nullptr) == (to->event == nullptr), "DeviceClock: marks of different devices");
  if (to->event) {
    cuda_check(cudaEventSynchronize(to->event), "cudaEventSynchronize");
    float ms = 0.f;
    cuda_check(cudaEventElapsedTime(&ms, from->event, to->event), "cudaEventElapsedTime");
    return ms / 1000.0;
  }
#endif
  return std::chrono::duration<double>(to->host - from->host).count();
}

void device_synchronize(const c10::Device& device) {
#ifdef OMNI_WITH_CUDA
  if (device.is_cuda()) c10::cuda::device_synchronize();
#endif
}

}  // namespace omni
