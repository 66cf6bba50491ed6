#include "vision/ops/cuda/current_stream.h"

#include <c10/cuda/CUDAStream.h>

namespace dtrain::vision::ops::cuda {

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

}  // namespace dtrain::vision::ops::cuda
