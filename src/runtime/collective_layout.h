// Where each rank's rows go in the collectives whose sizes are settled by negotiation
// (allgather, alltoall, reducescatter): computed from the planned Response alone, so that the
// host path and the GPU engines lay out their buffers alike.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/message.h"

namespace dtrain::runtime {

// Bytes in one row of the first dimension (the whole tensor for a scalar).
std::size_t row_bytes(const TensorView& view);

struct AllgatherLayout {
  std::vector<std::size_t> bytes;    // from each rank, concatenated in rank order
  std::vector<std::size_t> offsets;  // where each rank's bytes start in the output
  std::vector<std::int64_t> output_shape;
};
AllgatherLayout allgather_layout(const Response& response, const TensorView& input);

struct AlltoallLayout {
  std::vector<std::size_t> send_bytes;     // to each rank, from consecutive parts of the input
  std::vector<std::size_t> receive_bytes;  // from each rank, into consecutive parts of the output
  std::vector<std::int64_t> received_rows;
  std::vector<std::int64_t> output_shape;
};
AlltoallLayout alltoall_layout(const Response& response, const TensorView& input, int rank, int world);

struct ReducescatterLayout {
  std::vector<std::size_t> counts;         // elements of each rank's share, in rank order
  std::vector<std::size_t> offsets;        // where each share starts, in elements
  std::vector<std::int64_t> output_shape;  // this rank's share
};
ReducescatterLayout reducescatter_layout(const TensorView& input, int rank, int world);

}  // namespace dtrain::runtime
