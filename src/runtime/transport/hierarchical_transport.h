// Allreduce that follows the machine's topology: through shared memory among the ranks of
// a host, and -- when the job spans hosts -- across hosts for each local rank's share
// (reduce-scatter in the host, one allreduce of the rank's packed shares across hosts,
// allgather in the host).
// Negotiation goes through shared memory too when the job is on one host (ShmControl), and so
// do allgather and reducescatter, as allreduces (below); everything else (broadcast,
// alltoall, ...) and those two across hosts go over the global transport.
#pragma once

#include <memory>

#include "runtime/transport/shm/shm_allreduce.h"
#include "runtime/transport/shm/shm_control.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class HierarchicalTransport final : public Transport {
 public:
  // `cross` (ranks of the same local rank on every host) is null for a single-host job;
  // `control` (negotiation through shared memory) is null for a multi-host one.
  HierarchicalTransport(std::unique_ptr<Transport> global, std::unique_ptr<ShmAllreduce> local,
                        std::unique_ptr<Transport> cross, std::unique_ptr<ShmControl> control = nullptr);

  int rank() const override { return global_->rank(); }
  int size() const override { return global_->size(); }
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message) override {
    return control_ ? control_->gather_to_coordinator(message) : global_->gather_to_coordinator(message);
  }
  std::vector<char> broadcast_from_coordinator(const std::vector<char>& message) override {
    return control_ ? control_->broadcast_from_coordinator(message) : global_->broadcast_from_coordinator(message);
  }
  // One step through shared memory on one host; across hosts as the global transport offers.
  std::size_t summary_capacity() const override {
    return control_ ? ShmControl::kSlotBytes : global_->summary_capacity();
  }
  // On one host an exchange costs microseconds, and a slot holds no riders.
  std::size_t summary_rider_bytes() const override { return control_ ? 0 : global_->summary_rider_bytes(); }
  // On one host every rank reads every other's slot (exchange_summaries) and combines them;
  // across hosts the global transport reduces.
  std::vector<char> reduce_summaries(const std::vector<char>& message, SummaryCombine combine) override {
    return control_ ? Transport::reduce_summaries(message, combine) : global_->reduce_summaries(message, combine);
  }
  std::vector<std::vector<char>> exchange_summaries(const std::vector<char>& message) override {
    return control_ ? control_->exchange(message) : Transport::exchange_summaries(message);
  }
  void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) override;
  bool reduces_pieces_in_place() const override { return true; }
  void allreduce_pieces(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, double scale) override;
  // On one host: an allreduce of the zeroed output with each rank's bytes in its place, summed
  // byte by byte. Exactly one rank contributes each byte, so the sum is a copy: twice the
  // bytes an allgather moves, at memory speed instead of loopback TCP's.
  void allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) override;
  void broadcast(void* data, std::size_t bytes, int root) override { global_->broadcast(data, bytes, root); }
  void alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                 const std::vector<std::size_t>& receive_bytes) override {
    global_->alltoallv(input, send_bytes, output, receive_bytes);
  }
  // On one host: an allreduce of the whole buffer, of which each rank keeps its part.
  void reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype, ReduceOp op) override;
  // On one host through the shared segment's arrival counters (spin, then a futex sleep: the
  // last rank to arrive is released in tens of µs, where Gloo's TCP barrier took hundreds);
  // across hosts over the global transport.
  void barrier() override { cross_ ? global_->barrier() : local_->barrier(); }

 private:
  std::unique_ptr<Transport> global_;
  std::unique_ptr<ShmAllreduce> local_;
  std::unique_ptr<Transport> cross_;
  std::unique_ptr<ShmControl> control_;
  std::vector<char> shares_;  // this rank's shares, packed for the one cross-host allreduce
};

}  // namespace dtrain::runtime
