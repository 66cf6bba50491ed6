// The stream LibTorch queues a CUDA device's work on (its current stream), as the opaque
// handle TensorView::cuda_stream holds: the runtime orders its collectives after the work
// queued there and the stream after their results, as PyTorch's own collectives do.
#pragma once

#include <ATen/ATen.h>

namespace dtrain::libtorch {

// Needs a LibTorch built with CUDA (DTRAIN_TORCH_CUDA). With one without, such as Debian's,
// no tensor is ever on a CUDA device, and this throws an Error saying so.
void* current_cuda_stream(const at::Device& device);

}  // namespace dtrain::libtorch
