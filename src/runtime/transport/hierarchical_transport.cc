#include "runtime/transport/hierarchical_transport.h"

#include <cstring>

#include "runtime/transport/buffer_pieces.h"

namespace dtrain::runtime {

HierarchicalTransport::HierarchicalTransport(std::unique_ptr<Transport> global, std::unique_ptr<ShmAllreduce> local,
                                             std::unique_ptr<Transport> cross, std::unique_ptr<ShmControl> control)
    : global_(std::move(global)), local_(std::move(local)), cross_(std::move(cross)), control_(std::move(control)) {}

void HierarchicalTransport::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  allreduce_pieces({{data, count}}, dtype, op, 1.0);
}

void HierarchicalTransport::allreduce_pieces(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op,
                                             double scale) {
  if (!cross_) {
    local_->allreduce(pieces, dtype, op, scale);
    return;
  }
  local_->reduce_scatter(pieces, dtype, op);
  // One cross-host allreduce for all of this rank's shares: a TCP collective has a fixed cost
  // per call, so the shares travel packed rather than one call per chunk.
  const std::size_t esize = element_size(dtype);
  const auto shares = local_->my_shares(total_count(pieces), dtype);
  std::size_t packed = 0;
  for (const auto& [b, e] : shares) packed += e - b;
  if (shares_.size() < packed * esize) shares_.resize(packed * esize);
  auto copy_shares = [&](bool pack) {
    std::size_t at = 0;
    for (const auto& [b, e] : shares) {
      for_each_part(pieces, esize, b, e, [&](char* piece, std::size_t offset, std::size_t k) {
        char* packed_at = shares_.data() + (at + offset) * esize;
        pack ? std::memcpy(packed_at, piece, k * esize) : std::memcpy(piece, packed_at, k * esize);
      });
      at += e - b;
    }
  };
  copy_shares(true);
  cross_->allreduce(shares_.data(), packed, dtype, op);
  scale_elements(dtype, shares_.data(), packed, scale);  // this rank's shares only: the gather spreads them
  copy_shares(false);
  local_->allgather(pieces, dtype);
}

void HierarchicalTransport::allgatherv(const void* input, void* output,
                                       const std::vector<std::size_t>& bytes_per_rank) {
  if (cross_) {
    global_->allgatherv(input, output, bytes_per_rank);
    return;
  }
  std::size_t total = 0, mine = 0;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) mine = total;
    total += bytes_per_rank[static_cast<std::size_t>(r)];
  }
  if (total == 0) return;
  char* out = static_cast<char*>(output);
  std::memset(out, 0, total);
  const std::size_t own = bytes_per_rank[static_cast<std::size_t>(rank())];
  if (own > 0) std::memcpy(out + mine, input, own);
  local_->allreduce({{output, total}}, DataType::kUInt8, ReduceOp::kSum);
}

void HierarchicalTransport::reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype,
                                          ReduceOp op) {
  if (cross_) {
    global_->reducescatter(data, counts_per_rank, dtype, op);
    return;
  }
  std::size_t total = 0;
  for (std::size_t count : counts_per_rank) total += count;
  if (total > 0) local_->allreduce({{data, total}}, dtype, op);
}

}  // namespace dtrain::runtime
