// A saved tensor is a strided view of a storage (offset, sizes, strides, as
// torch._utils._rebuild_tensor_v2 receives them). A damaged file can describe
// a view that reaches outside its storage; this checks that before LibTorch
// ever touches the memory.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

#include "vision/torch_save/pickle_value.h"

namespace dtrain::vision::torch_save {

// The tensor `view` describes over `storage`, which holds `storage_numel`
// elements of `dtype`. Throws CheckpointError (without a file name) for
// negative sizes, strides or offset, more than 64 dimensions, element counts
// that overflow, or any element outside the storage.
at::Tensor view_of_storage(const at::Storage& storage, at::ScalarType dtype, std::int64_t storage_numel,
                           const TensorRef& view);

}  // namespace dtrain::vision::torch_save
