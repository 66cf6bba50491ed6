// Element-wise arithmetic used by every engine: combining two contributions, scaling, and
// the Average step. Half-precision types are combined in float and rounded back.
#pragma once

#include <cstddef>
#include <span>

#include "dtrain/dtrain.h"

namespace dtrain::runtime {

// out[i] = op(a[i], b[i]) for `count` elements; out may alias a or b. Average combines as Sum.
void reduce_elements(DataType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count);

// out = op over `contributions` (each `count` elements, aligned for dtype), combined first to
// last: ranks that reduce the same contributions in the same (rank) order end with the same
// bits. out may be the first contribution, not a later one.
void reduce_in_order(DataType dtype, ReduceOp op, void* out, std::span<const void* const> contributions,
                     std::size_t count);

// out[i] = op(a[i], b[i]) * factor: reduce_elements then scale_elements in one pass over the
// memory, rounded as the two would round (the last step of a reduction scales its result).
void reduce_and_scale(DataType dtype, ReduceOp op, void* out, const void* a, const void* b, std::size_t count,
                      double factor);

// data[i] *= factor for floating-point types (no-op when factor == 1).
void scale_elements(DataType dtype, void* data, std::size_t count, double factor);

// Integer Average: data[i] /= divisor, truncating toward zero (what integer division does).
void divide_integers(DataType dtype, void* data, std::size_t count, std::int64_t divisor);

// What the result of a Sum-based reduction of `world_size` contributions is multiplied by:
// the division for Average and the postscale factor (floating-point types; 1 for integers).
double result_scale(DataType dtype, ReduceOp op, int world_size, double postscale_factor);

// Integer Average after a Sum-based reduction: the division (no-op for other types and ops).
void finish_integer_average(DataType dtype, ReduceOp op, void* data, std::size_t count, int world_size);

// Both: what follows a Sum-based reduction of `world_size` contributions.
void finish_reduction(DataType dtype, ReduceOp op, void* data, std::size_t count, int world_size,
                      double postscale_factor);

}  // namespace dtrain::runtime
