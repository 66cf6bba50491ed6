// The element-wise work the NCCL engine does on the GPU around NCCL's own calls: packing many
// tensors into the fusion buffer and back in one launch per batch (not one copy per tensor),
// and the scaling (prescale, postscale, Average) NCCL does not do. All are queued on
// `stream` and return at once.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "dtrain/dtrain.h"

namespace dtrain::runtime::gpu {

struct CopyPiece {
  const void* source;  // null: write zeros
  void* destination;
  std::size_t bytes;
};

// Every piece's copy, in launches of up to a few dozen pieces each.
void batched_copy(const std::vector<CopyPiece>& pieces, cudaStream_t stream);

// data[i] *= factor (floating-point dtypes; half precision computed in float).
void scale(DataType dtype, void* data, std::size_t count, double factor, cudaStream_t stream);

// data[i] /= divisor, truncating toward zero (integer Average, as the host path does).
void divide_integers(DataType dtype, void* data, std::size_t count, std::int64_t divisor, cudaStream_t stream);

}  // namespace dtrain::runtime::gpu
