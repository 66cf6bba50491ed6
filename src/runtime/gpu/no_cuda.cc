// A build without the GPU engines (DTRAIN_CUDA=OFF, or CUDA or NCCL not found at configure
// time): a CUDA tensor is an error that says why, at submission.
#include "dtrain/error.h"
#include "runtime/gpu/device_engine.h"
#include "runtime/gpu/device_memory.h"

namespace dtrain::runtime {
namespace {

[[noreturn]] void no_cuda(const std::string& what) {
  throw Error(what +
              ", but this dtrain was built without CUDA (configure with DTRAIN_CUDA=ON where the CUDA "
              "toolkit and NCCL are installed)");
}

}  // namespace

namespace gpu {

bool built_with_cuda() { return false; }

int visible_cuda_devices() { return 0; }

std::shared_ptr<void> capture_ready(const TensorView& view, const std::string& what) {
  no_cuda(what + " is on " + to_string(view.device));
}

std::shared_ptr<void> allocate(const Device& device, std::size_t) {
  no_cuda("memory on " + to_string(device) + " was asked for");
}

}  // namespace gpu

std::unique_ptr<DeviceEngine> make_device_engine(Transport&, const RuntimeConfig&, int device, HostRunner) {
  no_cuda("a collective on cuda:" + std::to_string(device) + " was planned");
}

}  // namespace dtrain::runtime
