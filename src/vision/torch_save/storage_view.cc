#include "vision/torch_save/storage_view.h"

#include <string>

#include "vision/torch_save/checkpoint_error.h"

namespace dtrain::vision::torch_save {
namespace {

// No real tensor has anywhere near as many dimensions; a damaged
// file could claim millions and make every loop here long.
constexpr std::size_t kMaxDims = 64;

std::string shape_text(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace

at::Tensor view_of_storage(const at::Storage& storage, at::ScalarType dtype, std::int64_t storage_numel,
                           const TensorRef& view) {
  const auto describe = [&] {
    return "view (offset " + std::to_string(view.offset) + ", size " + shape_text(view.sizes) + ", stride " +
           shape_text(view.strides) + ") of a storage of " + std::to_string(storage_numel) + " elements";
  };
  if (view.sizes.size() > kMaxDims) throw CheckpointError("tensor with " + std::to_string(view.sizes.size()) + " dims");
  if (view.offset < 0) throw CheckpointError("negative offset in " + describe());
  bool empty = false;
  for (std::size_t d = 0; d < view.sizes.size(); ++d) {
    if (view.sizes[d] < 0 || view.strides[d] < 0) throw CheckpointError("negative size or stride in " + describe());
    empty = empty || view.sizes[d] == 0;
  }
  if (!empty) {
    // The last element the view touches: offset + sum((size - 1) * stride),
    // each step checked for overflow so a huge stride cannot wrap around.
    std::int64_t last = view.offset;
    std::int64_t numel = 1;
    for (std::size_t d = 0; d < view.sizes.size(); ++d) {
      std::int64_t reach = 0;
      if (__builtin_mul_overflow(view.sizes[d] - 1, view.strides[d], &reach) ||
          __builtin_add_overflow(last, reach, &last) || __builtin_mul_overflow(numel, view.sizes[d], &numel)) {
        throw CheckpointError("overflowing " + describe());
      }
    }
    if (last >= storage_numel) throw CheckpointError("out-of-bounds " + describe());
  }
  at::Tensor t = at::empty({0}, at::TensorOptions().dtype(dtype));
  t.set_(storage, view.offset, view.sizes, view.strides);
  if (view.requires_grad) {
    if (!at::isFloatingType(dtype) && !at::isComplexType(dtype)) {
      throw CheckpointError(std::string("requires_grad on a tensor of ") + at::toString(dtype));
    }
    t.set_requires_grad(true);
  }
  return t;
}

}  // namespace dtrain::vision::torch_save
