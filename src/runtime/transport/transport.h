// How bytes move between the ranks of one job. The runtime drives one Transport from one
// thread at a time (whichever runs the negotiation cycle), so implementations need not be
// thread safe. Every call is
// collective: all ranks make the same calls in the same order.
#pragma once

#include <cstddef>
#include <vector>

#include "dtrain/dtrain.h"
#include "runtime/reduction.h"

namespace dtrain::runtime {

// One tensor's memory within an allreduce of several tensors treated as one.
struct BufferPiece {
  void* data;
  std::size_t count;  // elements
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Control plane for negotiation; rank 0 is the coordinator.
  // Rank 0 gets every rank's message (index = rank); other ranks get an empty vector.
  virtual std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message) = 0;
  // Rank 0's `message` is returned on every rank.
  virtual std::vector<char> broadcast_from_coordinator(const std::vector<char>& message) = 0;
  // Optional, for the negotiation's shortcut (BackgroundLoop::cycle, cycle_summary.h): the
  // combination of every rank's short `message` by `combine` (associative, commutative and
  // exact), the same bytes on every rank, where a gather to rank 0 and a broadcast back take
  // two exchanges one after the other. A transport that offers it returns from
  // summary_capacity() the longest message it carries; 0, the default, means not offered.
  // The default combines what exchange_summaries() hands every rank (fine within a host);
  // across hosts the TCP mesh reduces by recursive doubling, log2 N steps.
  using SummaryCombine = void (*)(std::vector<char>& into, const std::vector<char>& other);
  virtual std::size_t summary_capacity() const { return 0; }
  // How many bytes of riders (cycle_summary.h: small allreduces' data) every rank's summaries
  // may carry together, beyond summary_capacity(); 0, the default: none. Worth it where an
  // exchange costs a round trip across hosts.
  virtual std::size_t summary_rider_bytes() const { return 0; }
  virtual std::vector<char> reduce_summaries(const std::vector<char>& message, SummaryCombine combine) {
    std::vector<std::vector<char>> all = exchange_summaries(message);
    std::vector<char> combined = std::move(all.front());
    for (std::size_t r = 1; r < all.size(); ++r) combine(combined, all[r]);
    return combined;
  }
  // Every rank's short `message` on every rank (index = rank) in a single exchange.
  virtual std::vector<std::vector<char>> exchange_summaries(const std::vector<char>& message) {
    (void)message;
    throw Error("dtrain: this transport does not exchange negotiation summaries");
  }

  // Data plane. Reductions combine with ReduceOp (Average combines as Sum; the caller divides).
  virtual void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op) = 0;
  // Whether allreduce_pieces works on the pieces where they are. If not, the caller packs
  // fused tensors into one buffer and calls allreduce().
  virtual bool reduces_pieces_in_place() const { return false; }
  // The allreduce of the concatenation of `pieces`, written back into them multiplied by
  // `scale` (floating-point types; 1 for none). A transport that reduces in chunks scales each
  // while it is in cache, saving the caller a pass over the whole result.
  virtual void allreduce_pieces(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, double scale) {
    for (const auto& piece : pieces) {
      allreduce(piece.data, piece.count, dtype, op);
      scale_elements(dtype, piece.data, piece.count, scale);
    }
  }
  // `bytes_per_rank[r]` bytes from each rank r, concatenated in rank order into `output`.
  virtual void allgatherv(const void* input, void* output, const std::vector<std::size_t>& bytes_per_rank) = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void alltoallv(const void* input, const std::vector<std::size_t>& send_bytes, void* output,
                         const std::vector<std::size_t>& receive_bytes) = 0;
  // `data` holds every rank's segments (counts_per_rank elements each, in rank order); on return
  // this rank's segment holds the reduction of everyone's copy of it. Other segments are scratch.
  virtual void reducescatter(void* data, const std::vector<std::size_t>& counts_per_rank, DataType dtype,
                             ReduceOp op) = 0;
  virtual void barrier() = 0;
};

}  // namespace dtrain::runtime
