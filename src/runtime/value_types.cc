// The public API's value types (dtrain/dtrain.h): their names and sizes. Apart from api.cc so
// that code which only names them (message.cc, its fuzz target) need not link the runtime.
#include <functional>
#include <numeric>
#include <string>

#include "dtrain/dtrain.h"

namespace dtrain {

std::size_t element_size(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16: return 2;
    case DataType::kInt32:
    case DataType::kFloat32: return 4;
    case DataType::kInt64:
    case DataType::kFloat64: return 8;
  }
  return 1;
}

const char* to_string(DeviceType type) { return type == DeviceType::kCUDA ? "cuda" : "cpu"; }

std::string to_string(const Device& device) {
  return device.is_cuda() ? "cuda:" + std::to_string(device.index) : "cpu";
}

const char* to_string(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8: return "uint8";
    case DataType::kInt32: return "int32";
    case DataType::kInt64: return "int64";
    case DataType::kFloat16: return "float16";
    case DataType::kBFloat16: return "bfloat16";
    case DataType::kFloat32: return "float32";
    case DataType::kFloat64: return "float64";
  }
  return "unknown";
}

bool is_floating_point(DataType dtype) {
  return dtype == DataType::kFloat16 || dtype == DataType::kBFloat16 || dtype == DataType::kFloat32 ||
         dtype == DataType::kFloat64;
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "Sum";
    case ReduceOp::kAverage: return "Average";
    case ReduceOp::kMin: return "Min";
    case ReduceOp::kMax: return "Max";
    case ReduceOp::kProduct: return "Product";
  }
  return "unknown";
}

std::int64_t TensorView::num_elements() const {
  return std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
}

}  // namespace dtrain
