// LibTorch's current CUDA stream, on which the detection kernels are queued (as LibTorch's
// own operators are). Only in a build against a LibTorch with CUDA (DTRAIN_TORCH_CUDA).
#pragma once

#include <cuda_runtime_api.h>

namespace dtrain::vision::ops::cuda {

cudaStream_t current_stream();

}  // namespace dtrain::vision::ops::cuda
