// Where a rank computes (its threads and memory: compute_threads.cc).
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

}  // namespace dtrain::libtorch
