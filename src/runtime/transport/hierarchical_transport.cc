#include "runtime/transport/hierarchical_transport.h"

namespace dtrain::runtime {

HierarchicalTransport::HierarchicalTransport(std::unique_ptr<Transport> global, std::unique_ptr<ShmAllreduce> local,
                                             std::unique_ptr<Transport> cross)
    : global_(std::move(global)), local_(std::move(local)), cross_(std::move(cross)) {}

void HierarchicalTransport::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) {
  allreduce_pieces({{data, count}}, dtype, op);
}

void HierarchicalTransport::allreduce_pieces(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op) {
  if (!cross_) {
    local_->allreduce(pieces, dtype, op);
    return;
  }
  local_->allreduce(pieces, dtype, op, [&](void* share, std::size_t n) { cross_->allreduce(share, n, dtype, op); });
}

}  // namespace dtrain::runtime
