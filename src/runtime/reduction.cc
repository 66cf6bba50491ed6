#include "runtime/reduction.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "runtime/half_float.h"

namespace dtrain::runtime {
namespace {

template <typename T>
T combine(ReduceOp op, T a, T b) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return static_cast<T>(a + b);
    case ReduceOp::kMin: return std::min(a, b);
    case ReduceOp::kMax: return std::max(a, b);
    case ReduceOp::kProduct: return static_cast<T>(a * b);
  }
  return a;
}

template <typename T>
void reduce_typed(ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  // One switch per call, not per element, so the loops vectorise.
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      for (std::size_t i = 0; i < count; ++i) o[i] = static_cast<T>(x[i] + y[i]);
      break;
    case ReduceOp::kMin:
      for (std::size_t i = 0; i < count; ++i) o[i] = std::min(x[i], y[i]);
      break;
    case ReduceOp::kMax:
      for (std::size_t i = 0; i < count; ++i) o[i] = std::max(x[i], y[i]);
      break;
    case ReduceOp::kProduct:
      for (std::size_t i = 0; i < count; ++i) o[i] = static_cast<T>(x[i] * y[i]);
      break;
  }
}

// Each element widened to float, combined and rounded back. The loop is instantiated per op,
// as reduce_typed's, so that it vectorises: compressed gradients (bfloat16) come through here.
template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float), ReduceOp Op>
void combine_half(std::uint16_t* o, const std::uint16_t* x, const std::uint16_t* y, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) o[i] = FromFloat(combine<float>(Op, ToFloat(x[i]), ToFloat(y[i])));
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void reduce_half(ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return combine_half<ToFloat, FromFloat, ReduceOp::kSum>(o, x, y, count);
    case ReduceOp::kMin: return combine_half<ToFloat, FromFloat, ReduceOp::kMin>(o, x, y, count);
    case ReduceOp::kMax: return combine_half<ToFloat, FromFloat, ReduceOp::kMax>(o, x, y, count);
    case ReduceOp::kProduct: return combine_half<ToFloat, FromFloat, ReduceOp::kProduct>(o, x, y, count);
  }
}

template <typename T>
void scale_typed(void* data, std::size_t count, double factor) {
  auto* d = static_cast<T*>(data);
  const T f = static_cast<T>(factor);
  for (std::size_t i = 0; i < count; ++i) d[i] *= f;
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void scale_half(void* data, std::size_t count, double factor) {
  auto* d = static_cast<std::uint16_t*>(data);
  const float f = static_cast<float>(factor);
  for (std::size_t i = 0; i < count; ++i) d[i] = FromFloat(ToFloat(d[i]) * f);
}

// Sum and Average only (the gradients' case); each element rounded after the sum and after
// the product, as the two separate passes round.
template <typename T>
void sum_and_scale_typed(void* out, const void* a, const void* b, std::size_t count, double factor) {
  auto* o = static_cast<T*>(out);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  const T f = static_cast<T>(factor);
  for (std::size_t i = 0; i < count; ++i) o[i] = static_cast<T>(x[i] + y[i]) * f;
}

template <float (*ToFloat)(std::uint16_t), std::uint16_t (*FromFloat)(float)>
void sum_and_scale_half(void* out, const void* a, const void* b, std::size_t count, double factor) {
  auto* o = static_cast<std::uint16_t*>(out);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  const float f = static_cast<float>(factor);
  for (std::size_t i = 0; i < count; ++i) o[i] = FromFloat(ToFloat(FromFloat(ToFloat(x[i]) + ToFloat(y[i]))) * f);
}

template <typename T>
void divide_typed(void* data, std::size_t count, std::int64_t divisor) {
  auto* d = static_cast<T*>(data);
  for (std::size_t i = 0; i < count; ++i) d[i] = static_cast<T>(d[i] / static_cast<T>(divisor));
}

}  // namespace

void reduce_elements(DataType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count) {
  switch (dtype) {
    case DataType::kUInt8: return reduce_typed<std::uint8_t>(op, out, a, b, count);
    case DataType::kInt32: return reduce_typed<std::int32_t>(op, out, a, b, count);
    case DataType::kInt64: return reduce_typed<std::int64_t>(op, out, a, b, count);
    case DataType::kFloat32: return reduce_typed<float>(op, out, a, b, count);
    case DataType::kFloat64: return reduce_typed<double>(op, out, a, b, count);
    case DataType::kFloat16: return reduce_half<half_to_float, float_to_half>(op, out, a, b, count);
    case DataType::kBFloat16: return reduce_half<bfloat16_to_float, float_to_bfloat16>(op, out, a, b, count);
  }
}

void reduce_in_order(DataType dtype, ReduceOp op, void* out, std::span<const void* const> contributions,
                     std::size_t count) {
  if (contributions.empty()) return;
  if (out != contributions[0]) std::memcpy(out, contributions[0], count * element_size(dtype));
  for (std::size_t i = 1; i < contributions.size(); ++i) reduce_elements(dtype, op, out, out, contributions[i], count);
}

void reduce_and_scale(DataType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count,
                      double factor) {
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAverage;
  if (factor == 1.0 || !sum || !is_floating_point(dtype)) {
    reduce_elements(dtype, op, out, a, b, count);
    scale_elements(dtype, out, count, factor);
    return;
  }
  switch (dtype) {
    case DataType::kFloat32: return sum_and_scale_typed<float>(out, a, b, count, factor);
    case DataType::kFloat64: return sum_and_scale_typed<double>(out, a, b, count, factor);
    case DataType::kFloat16: return sum_and_scale_half<half_to_float, float_to_half>(out, a, b, count, factor);
    case DataType::kBFloat16: return sum_and_scale_half<bfloat16_to_float, float_to_bfloat16>(out, a, b, count, factor);
    default: return;
  }
}

void scale_elements(DataType dtype, void* data, std::size_t count, double factor) {
  if (factor == 1.0) return;
  switch (dtype) {
    case DataType::kFloat32: return scale_typed<float>(data, count, factor);
    case DataType::kFloat64: return scale_typed<double>(data, count, factor);
    case DataType::kFloat16: return scale_half<half_to_float, float_to_half>(data, count, factor);
    case DataType::kBFloat16: return scale_half<bfloat16_to_float, float_to_bfloat16>(data, count, factor);
    default: return;  // integer scaling is rejected when the operation is submitted
  }
}

void divide_integers(DataType dtype, void* data, std::size_t count, std::int64_t divisor) {
  switch (dtype) {
    case DataType::kUInt8: return divide_typed<std::uint8_t>(data, count, divisor);
    case DataType::kInt32: return divide_typed<std::int32_t>(data, count, divisor);
    case DataType::kInt64: return divide_typed<std::int64_t>(data, count, divisor);
    default: return;
  }
}

double result_scale(DataType dtype, ReduceOp op, int world_size, double postscale_factor) {
  if (!is_floating_point(dtype)) return 1.0;
  return op == ReduceOp::kAverage ? postscale_factor / world_size : postscale_factor;
}

void finish_integer_average(DataType dtype, ReduceOp op, void* data, std::size_t count, int world_size) {
  if (!is_floating_point(dtype) && op == ReduceOp::kAverage && world_size > 1) {
    divide_integers(dtype, data, count, world_size);
  }
}

void finish_reduction(DataType dtype, ReduceOp op, void* data, std::size_t count, int world_size,
                      double postscale_factor) {
  scale_elements(dtype, data, count, result_scale(dtype, op, world_size, postscale_factor));
  finish_integer_average(dtype, op, data, count, world_size);
}

}  // namespace dtrain::runtime
