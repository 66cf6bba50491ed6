// What each rank contributes to a reduction in the multi-process suites, and what the
// reduction of every rank's contribution must then be, computed locally by each rank.
#pragma once

#include <algorithm>
#include <cstddef>

#include "dtrain/dtrain.h"

namespace dtrain::testing {

// Small integers, so every dtype (bfloat16 sums) holds the exact result; products multiply
// only ones and twos, so uint8 holds them at any world size this suite runs.
inline double contribution(int rank, std::size_t i, ReduceOp op = ReduceOp::kSum) {
  if (op == ReduceOp::kProduct) return 1 + static_cast<double>((rank + i) % 2);
  return (rank + 1) + static_cast<double>(i % 3);
}

inline double expected_reduction(ReduceOp op, int world, std::size_t i, DataType dtype) {
  double acc = contribution(0, i, op);
  for (int r = 1; r < world; ++r) {
    const double v = contribution(r, i, op);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
    }
  }
  if (op == ReduceOp::kAverage) {
    acc = is_floating_point(dtype) ? acc / world : static_cast<double>(static_cast<long long>(acc) / world);
  }
  return acc;
}

}  // namespace dtrain::testing
