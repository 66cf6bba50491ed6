// Where and with how many threads a rank computes.
#include <dlfcn.h>

#include <ATen/Parallel.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include "dtrain/torch.h"

namespace dtrain::libtorch {

at::Device pin_device() {
  if (at::globalContext().hasCUDA()) {
    const int count = c10::impl::getDeviceGuardImpl(at::kCUDA)->deviceCount();
    if (count > 0) {
      const at::Device device(at::kCUDA, static_cast<c10::DeviceIndex>(local_rank() % count));
      c10::impl::getDeviceGuardImpl(at::kCUDA)->setDevice(device);
      return device;
    }
  }
  return at::Device(at::kCPU);
}

void set_num_threads(int threads) {
  if (threads < 1) throw Error("dtrain::set_num_threads: need at least 1 thread, got " + std::to_string(threads));
  at::set_num_threads(threads);
  // Found at run time: LibTorch may be linked against OpenBLAS or another BLAS.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) set(threads);
}

}  // namespace dtrain::libtorch
