#include "runtime/reduction.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/half_float.h"
#include "tests/runtime/tensor_values.h"

namespace dtrain::runtime {
namespace {

TEST(HalfFloat, RoundTripsEveryFiniteHalf) {
  for (std::uint32_t bits = 0; bits < 0x10000; ++bits) {
    const auto h = static_cast<std::uint16_t>(bits);
    const float f = half_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f), h) << "bits " << bits;
  }
}

TEST(HalfFloat, RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_EQ(float_to_half(65520.0f), 0x7c00);            // halfway to the next: rounds to inf
  EXPECT_EQ(float_to_half(1.0f + 1.0f / 2048), 0x3c00);  // tie: even mantissa stays
  EXPECT_EQ(float_to_half(1.0f + 3.0f / 2048), 0x3c02);  // tie: odd mantissa rounds up
  EXPECT_EQ(float_to_half(5.9604645e-8f), 0x0001);       // smallest subnormal
  EXPECT_EQ(float_to_half(2.9802322e-8f), 0x0000);       // half of it: tie to even (zero)
  EXPECT_TRUE(std::isnan(half_to_float(float_to_half(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(BFloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(bfloat16_to_float(0x3f80), 1.0f);
  EXPECT_EQ(float_to_bfloat16(1.0f + 1.0f / 256), 0x3f80);  // tie to even
  EXPECT_EQ(float_to_bfloat16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bfloat16_to_float(float_to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(Reduction, EveryOpOnEveryDtype) {
  using dtrain::testing::Tensor;
  for (DataType dtype : dtrain::testing::all_dtypes()) {
    Tensor a(dtype, {3}), b(dtype, {3}), out(dtype, {3});
    const double av[] = {2, 7, 4}, bv[] = {5, 3, 4};
    for (int i = 0; i < 3; ++i) {
      a.set(i, av[i]);
      b.set(i, bv[i]);
    }
    struct Case {
      ReduceOp op;
      double expected[3];
    } cases[] = {{ReduceOp::kSum, {7, 10, 8}},
                 {ReduceOp::kAverage, {7, 10, 8}},  // Average combines as Sum; the division comes later
                 {ReduceOp::kMin, {2, 3, 4}},
                 {ReduceOp::kMax, {5, 7, 4}},
                 {ReduceOp::kProduct, {10, 21, 16}}};
    for (const auto& c : cases) {
      reduce_elements(dtype, c.op, out.view.data, a.view.data, b.view.data, 3);
      for (int i = 0; i < 3; ++i) EXPECT_EQ(out.get(i), c.expected[i]) << to_string(dtype) << " " << to_string(c.op);
    }
  }
}

// The shared-memory allreduce combines and scales in one pass; its results must be the bits
// that the separate passes (every other engine) produce, for every type and operation.
TEST(Reduction, ReduceAndScaleRoundsAsTheTwoPassesDo) {
  using dtrain::testing::Tensor;
  constexpr int n = 64;
  for (DataType dtype : dtrain::testing::all_dtypes()) {
    Tensor a(dtype, {n}), b(dtype, {n}), fused(dtype, {n}), separate(dtype, {n});
    for (int i = 0; i < n; ++i) {
      a.set(i, is_floating_point(dtype) ? 0.1 * i + 1.0 / 3 : i);
      b.set(i, is_floating_point(dtype) ? 2.7 - 0.07 * i : 2 * i + 1);
    }
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      for (double factor : {1.0, 0.5, 1.0 / 3}) {
        reduce_and_scale(dtype, op, fused.view.data, a.view.data, b.view.data, n, factor);
        reduce_elements(dtype, op, separate.view.data, a.view.data, b.view.data, n);
        scale_elements(dtype, separate.view.data, n, factor);
        EXPECT_EQ(std::memcmp(fused.view.data, separate.view.data, n * element_size(dtype)), 0)
            << to_string(dtype) << " " << to_string(op) << " factor " << factor;
      }
    }
  }
}

TEST(Reduction, FinishAveragesFloatsAndTruncatesIntegers) {
  using dtrain::testing::Tensor;
  Tensor f(DataType::kFloat32, {2});
  f.set(0, 3);
  f.set(1, -3);
  finish_reduction(DataType::kFloat32, ReduceOp::kAverage, f.view.data, 2, 2, 4.0);
  EXPECT_EQ(f.get(0), 6.0);  // 3 / 2 * 4
  EXPECT_EQ(f.get(1), -6.0);
  Tensor i(DataType::kInt32, {2});
  i.set(0, 7);
  i.set(1, -7);
  finish_reduction(DataType::kInt32, ReduceOp::kAverage, i.view.data, 2, 2, 1.0);
  EXPECT_EQ(i.get(0), 3);
  EXPECT_EQ(i.get(1), -3);
}

// Every rank reducing the same contributions first to last gets the same bits; another order
// may not (float addition does not associate), which is why the order is fixed.
TEST(Reduction, ReduceInOrderCombinesFirstToLast) {
  const float big[] = {1e8f, 3.0f};
  const float one[] = {1.0f, 4.0f};
  const float minus_big[] = {-1e8f, 5.0f};
  float out[2];
  const void* in_order[] = {big, one, minus_big};
  reduce_in_order(DataType::kFloat32, ReduceOp::kSum, out, in_order, 2);
  EXPECT_EQ(out[0], 0.0f);  // (1e8 + 1) rounds back to 1e8
  EXPECT_EQ(out[1], 12.0f);
  const void* reordered[] = {big, minus_big, one};
  reduce_in_order(DataType::kFloat32, ReduceOp::kSum, out, reordered, 2);
  EXPECT_EQ(out[0], 1.0f);

  float first[] = {2.0f, 7.0f};  // out may be the first contribution
  const float second[] = {5.0f, 4.0f};
  const void* into_first[] = {first, second};
  reduce_in_order(DataType::kFloat32, ReduceOp::kMax, first, into_first, 2);
  EXPECT_EQ(first[0], 5.0f);
  EXPECT_EQ(first[1], 7.0f);
  const void* none[] = {nullptr};
  reduce_in_order(DataType::kFloat32, ReduceOp::kSum, out, std::span<const void* const>(none, 0), 2);  // no-op
  EXPECT_EQ(out[0], 1.0f);
}

}  // namespace
}  // namespace dtrain::runtime
