#include "torch/cuda_stream.h"

#include "dtrain/error.h"

#if DTRAIN_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

namespace dtrain::libtorch {

#if DTRAIN_TORCH_CUDA
void* current_cuda_stream(const at::Device& device) { return c10::cuda::getCurrentCUDAStream(device.index()).stream(); }
#else
void* current_cuda_stream(const at::Device& device) {
  throw Error("dtrain: a tensor on " + device.str() +
              ", but dtrain's LibTorch adapter was built against a LibTorch without CUDA");
}
#endif

}  // namespace dtrain::libtorch
