#include "runtime/collective_layout.h"

#include "runtime/response_builder.h"

namespace dtrain::runtime {

std::size_t row_bytes(const TensorView& view) {
  std::size_t row = element_size(view.dtype);
  for (std::size_t d = 1; d < view.shape.size(); ++d) row *= static_cast<std::size_t>(view.shape[d]);
  return row;
}

AllgatherLayout allgather_layout(const Response& response, const TensorView& input) {
  AllgatherLayout layout;
  const std::size_t row = row_bytes(input);
  std::int64_t rows = 0;
  std::size_t offset = 0;
  for (std::int64_t first_dim : response.sizes) {
    layout.bytes.push_back(static_cast<std::size_t>(first_dim) * row);
    layout.offsets.push_back(offset);
    offset += layout.bytes.back();
    rows += first_dim;
  }
  layout.output_shape = input.shape;
  layout.output_shape[0] = rows;
  return layout;
}

AlltoallLayout alltoall_layout(const Response& response, const TensorView& input, int rank, int world) {
  AlltoallLayout layout;
  const std::size_t row = row_bytes(input);
  std::int64_t rows = 0;
  for (int r = 0; r < world; ++r) {
    // response.sizes is the world x world matrix of rows, sender by receiver.
    layout.send_bytes.push_back(static_cast<std::size_t>(response.sizes[rank * world + r]) * row);
    layout.received_rows.push_back(response.sizes[r * world + rank]);
    layout.receive_bytes.push_back(static_cast<std::size_t>(layout.received_rows.back()) * row);
    rows += layout.received_rows.back();
  }
  layout.output_shape = input.shape;
  layout.output_shape[0] = rows;
  return layout;
}

ReducescatterLayout reducescatter_layout(const TensorView& input, int rank, int world) {
  ReducescatterLayout layout;
  const std::int64_t first = input.shape[0];
  const std::size_t row_elements = row_bytes(input) / element_size(input.dtype);
  std::size_t offset = 0;
  for (int r = 0; r < world; ++r) {
    layout.counts.push_back(static_cast<std::size_t>(reducescatter_rows(first, world, r)) * row_elements);
    layout.offsets.push_back(offset);
    offset += layout.counts.back();
  }
  layout.output_shape = input.shape;
  layout.output_shape[0] = reducescatter_rows(first, world, rank);
  return layout;
}

}  // namespace dtrain::runtime
