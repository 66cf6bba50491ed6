// The CUDA calls the CUDA-free parts of the runtime (submission, output allocation) need,
// behind an interface without CUDA types. A build without CUDA implements them by throwing
// an Error that says so (no_cuda.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dtrain/dtrain.h"

namespace dtrain::runtime::gpu {

// Whether this build has the GPU engines.
bool built_with_cuda();

// The CUDA devices this process can use (0 without CUDA, a driver or a device).
int visible_cuda_devices();

// Checks that `view` can be submitted (a CUDA build, the device exists, the pointer is device
// memory of view.device) and returns the event the runtime waits for before reading it: the
// caller's ready_event, or one recorded now on view.cuda_stream (owned by the result).
// `what` names the tensor in errors ("dtrain::allreduce 'w': input").
std::shared_ptr<void> capture_ready(const TensorView& view, const std::string& what);

// `bytes` of memory on `device`, freed when the last copy of the result goes.
std::shared_ptr<void> allocate(const Device& device, std::size_t bytes);

}  // namespace dtrain::runtime::gpu
