// Allreduce among the ranks of one host through a shared segment: each chunk of the tensor is
// copied into the rank's slot, then every rank reduces its own share of the chunk across all
// slots (reduce-scatter) and finally copies every share back (allgather), so all ranks work in
// parallel on different bytes. Two sets of slots alternate, so one barrier per phase suffices.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>

#include "dtrain/dtrain.h"
#include "runtime/transport/shm/shared_segment.h"
#include "runtime/transport/transport.h"

namespace dtrain::runtime {

class ShmAllreduce {
 public:
  // Bytes per rank per slot set. Inside one host, 1 MiB chunks stay in the shared cache. Across
  // hosts each chunk's share is one cross-host allreduce, whose fixed cost (a millisecond over
  // TCP) calls for bigger chunks.
  static constexpr std::size_t kSlotBytes = 1 << 20;
  static constexpr std::size_t kCrossHostSlotBytes = 16 << 20;
  static constexpr int kMaxLocalRanks = 64;

  static std::size_t segment_bytes(int local_size, std::size_t slot_bytes = kSlotBytes);

  // Formats a freshly created segment (local rank 0 only, before the others map it).
  static void format(SharedSegment& segment, int local_size, std::size_t slot_bytes = kSlotBytes);

  ShmAllreduce(SharedSegment segment, int local_rank, int local_size, std::chrono::milliseconds timeout);

  // In place on `data`. `between` (optional) runs on this rank's reduced share of each chunk
  // before the shares are gathered: the hierarchical allreduce reduces it across hosts there.
  using ShareHook = std::function<void(void* share, std::size_t count)>;
  void allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op, const ShareHook& between = {});
  // The same over the concatenation of `pieces`, copied into and out of the slots directly:
  // fused tensors need no staging buffer.
  void allreduce(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, const ShareHook& between = {});

  void barrier();

 private:
  char* slot(int set, int rank) const;
  void wait_for_all(std::uint64_t generation);

  SharedSegment segment_;
  int local_rank_;
  int local_size_;
  std::size_t slot_bytes_;
  std::chrono::milliseconds timeout_;
  std::uint64_t generation_ = 0;
  std::uint64_t chunk_ = 0;  // chunks done since creation: selects the slot set
  int spin_limit_;           // pauses before yielding the core while waiting at a barrier
};

}  // namespace dtrain::runtime
