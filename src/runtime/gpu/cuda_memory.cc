#include <cuda_runtime_api.h>

#include "runtime/gpu/cuda_check.h"
#include "runtime/gpu/device_memory.h"

namespace dtrain::runtime::gpu {

bool built_with_cuda() { return true; }

int visible_cuda_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: clear it so that later calls do not report it
    return 0;
  }
  return count;
}

std::shared_ptr<void> capture_ready(const TensorView& view, const std::string& what) {
  const std::string where = what + " is on " + to_string(view.device);
  int count = 0;
  if (const cudaError_t result = cudaGetDeviceCount(&count); result != cudaSuccess) {
    throw Error(where + ", but no CUDA device can be used here: " + cudaGetErrorString(result));
  }
  if (view.device.index < 0 || view.device.index >= count) {
    throw Error(where + ", but this machine has " + std::to_string(count) + " CUDA device(s)");
  }
  if (view.data) {
    cudaPointerAttributes attributes{};
    if (cudaPointerGetAttributes(&attributes, view.data) != cudaSuccess) {
      cudaGetLastError();  // not sticky: clear it so that later calls do not report it
      throw Error(where + ", but its data pointer is not known to CUDA");
    }
    if (attributes.type != cudaMemoryTypeDevice && attributes.type != cudaMemoryTypeManaged) {
      throw Error(where + ", but its data pointer is host memory");
    }
    if (attributes.device != view.device.index) {
      throw Error(where + ", but its data pointer is memory of cuda:" + std::to_string(attributes.device));
    }
  }
  if (view.ready_event) return std::shared_ptr<void>(view.ready_event, [](void*) {});  // the caller's
  DeviceScope scope(view.device.index);
  cudaEvent_t event = nullptr;
  cuda_check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  std::shared_ptr<void> owned(event, [](void* e) { cudaEventDestroy(static_cast<cudaEvent_t>(e)); });
  cuda_check(cudaEventRecord(event, static_cast<cudaStream_t>(view.cuda_stream)), "cudaEventRecord");
  return owned;
}

std::shared_ptr<void> allocate(const Device& device, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  DeviceScope scope(device.index);
  void* memory = nullptr;
  cuda_check(cudaMalloc(&memory, bytes), "cudaMalloc");
  return std::shared_ptr<void>(memory, [](void* p) { cudaFree(p); });
}

}  // namespace dtrain::runtime::gpu
