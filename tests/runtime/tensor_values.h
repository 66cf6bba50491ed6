// Test helpers: type-erased tensors whose elements are set and read as doubles, so one
// test body covers every dtype.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "dtrain/dtrain.h"
#include "runtime/half_float.h"

namespace dtrain::testing {

inline void store(DataType dtype, void* data, std::size_t i, double v) {
  switch (dtype) {
    case DataType::kUInt8: static_cast<std::uint8_t*>(data)[i] = static_cast<std::uint8_t>(v); break;
    case DataType::kInt32: static_cast<std::int32_t*>(data)[i] = static_cast<std::int32_t>(v); break;
    case DataType::kInt64: static_cast<std::int64_t*>(data)[i] = static_cast<std::int64_t>(v); break;
    case DataType::kFloat16:
      static_cast<std::uint16_t*>(data)[i] = runtime::float_to_half(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<std::uint16_t*>(data)[i] = runtime::float_to_bfloat16(static_cast<float>(v));
      break;
    case DataType::kFloat32: static_cast<float*>(data)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(data)[i] = v; break;
  }
}

inline double load(DataType dtype, const void* data, std::size_t i) {
  switch (dtype) {
    case DataType::kUInt8: return static_cast<const std::uint8_t*>(data)[i];
    case DataType::kInt32: return static_cast<const std::int32_t*>(data)[i];
    case DataType::kInt64: return static_cast<double>(static_cast<const std::int64_t*>(data)[i]);
    case DataType::kFloat16: return runtime::half_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DataType::kBFloat16: return runtime::bfloat16_to_float(static_cast<const std::uint16_t*>(data)[i]);
    case DataType::kFloat32: return static_cast<const float*>(data)[i];
    case DataType::kFloat64: return static_cast<const double*>(data)[i];
  }
  return 0;
}

// An owned buffer plus a view of it.
struct Tensor {
  Tensor(DataType dtype, std::vector<std::int64_t> shape) {
    view.dtype = dtype;
    view.shape = std::move(shape);
    bytes.resize(view.num_bytes() + 1);  // +1: never a null pointer, even when empty
    view.data = bytes.data();
  }
  std::size_t size() const { return static_cast<std::size_t>(view.num_elements()); }
  void set(std::size_t i, double v) { store(view.dtype, view.data, i, v); }
  double get(std::size_t i) const { return load(view.dtype, view.data, i); }

  std::vector<std::byte> bytes;
  TensorView view;
};

inline const std::vector<DataType>& all_dtypes() {
  static const std::vector<DataType> all = {DataType::kUInt8,   DataType::kInt32,    DataType::kInt64,
                                            DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                            DataType::kFloat64};
  return all;
}

}  // namespace dtrain::testing
