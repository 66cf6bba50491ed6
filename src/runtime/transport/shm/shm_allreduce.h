// Allreduce among the ranks of one host through a shared segment: of each chunk of the tensor,
// every rank copies into its slot what the others reduce, then reduces its own share from its
// data and the others' slots (reduce-scatter) and finally copies the others' shares back
// (allgather), so all ranks work in parallel on different bytes. Two sets of slots alternate,
// so one barrier per phase suffices.
#pragma once

#include <chrono>
#include <cstddef>

#include "dtrain/dtrain.h"
#include "runtime/transport/shm/shared_segment.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class ShmAllreduce {
 public:
  static constexpr std::size_t kSlotBytes = 1 << 20;  // per rank per set: fits the shared cache
  static constexpr int kMaxLocalRanks = 64;

  static std::size_t segment_bytes(int local_size);

  // Formats a freshly created segment (local rank 0 only, before the others map it).
  static void format(SharedSegment& segment, int local_size);

  ShmAllreduce(SharedSegment segment, int local_rank, int local_size, std::chrono::milliseconds timeout);

  // In place on the concatenation of `pieces` (fused tensors need no staging buffer), the
  // result multiplied by `scale` (floating-point types; see scale_elements).
  void allreduce(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, double scale = 1.0);

  // The two halves, for the hierarchical allreduce: after reduce_scatter, this rank's shares
  // (my_shares) of the pieces hold the host's reduction; allgather then copies every rank's
  // shares into every rank's pieces.
  void reduce_scatter(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op);
  void allgather(const std::vector<BufferPiece>& pieces, DataType dtype);
  // [begin, end) element ranges of this rank's shares in a tensor of `count` elements.
  std::vector<std::pair<std::size_t, std::size_t>> my_shares(std::size_t count, DataType dtype) const;

  void barrier();

 private:
  enum class Phase { kAllreduce, kReduceScatter, kAllgather };
  void run(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, Phase phase, double scale);
  char* slot(int set, int rank) const;
  void wait_for_all(std::uint64_t generation);

  SharedSegment segment_;
  int local_rank_;
  int local_size_;
  std::chrono::milliseconds timeout_;
  std::uint64_t generation_ = 0;
  std::uint64_t chunk_ = 0;  // chunks done since creation: selects the slot set
  int spin_limit_;           // pauses before sleeping while waiting at a barrier
};

}  // namespace dtrain::runtime
