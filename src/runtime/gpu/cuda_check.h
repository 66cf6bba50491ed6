// Turns a failed CUDA runtime call into a dtrain::Error naming the call, the device and the
// CUDA error. For the GPU engines' own files (it needs the CUDA headers).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "dtrain/error.h"

namespace dtrain::runtime::gpu {

inline void cuda_check(cudaError_t result, const char* call) {
  if (result == cudaSuccess) return;
  int device = -1;
  cudaGetDevice(&device);
  throw Error(std::string("dtrain: ") + call + " failed on cuda:" + std::to_string(device) + ": " +
              cudaGetErrorName(result) + " (" + cudaGetErrorString(result) + ")");
}

// Sets the calling thread's device for the scope, restoring the previous one after.
class DeviceScope {
 public:
  explicit DeviceScope(int device) {
    cuda_check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (previous_ != device) cuda_check(cudaSetDevice(device), "cudaSetDevice");
  }
  ~DeviceScope() { cudaSetDevice(previous_); }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  int previous_ = 0;
};

}  // namespace dtrain::runtime::gpu
