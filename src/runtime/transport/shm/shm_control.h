// The negotiation messages of a one-host job through shared memory: every rank's cycle
// report to rank 0 and rank 0's plan back, without a trip through sockets (over Gloo each
// message costs a few hundred microseconds; here a few).
//
// Each rank has two mailboxes: up (rank -> 0) and down (0 -> rank). A mailbox holds one piece
// of one message at a time; a message larger than a mailbox travels in pieces, each taken by
// the reader before the writer puts the next. Two counters per mailbox carry the handshake:
// `posted` (pieces written, advanced by the writer) and `taken` (pieces read, advanced by the
// reader), so posted - taken is 0 or 1.
//
// For the negotiation's shortcut (BackgroundLoop::cycle) each rank also has a slot that every
// other rank reads: exchange() puts a short message there and reads everyone else's, one step
// in which all ranks write at once. A slot's `round` counts messages written (by its owner),
// `reads` counts readings (by the others, size - 1 per round), so its owner writes the next
// message once reads == round * (size - 1). Counters are compared for equality only, so they
// may wrap.
//
// A waiting rank spins briefly (a busy peer answers within microseconds), then sleeps on a
// futex over the counter it waits for: an idle peer may not cycle for a whole idle cycle, and
// an idle job must not burn CPU. While it sleeps it checks, every few milliseconds, that the
// peer's process lives and that DTRAIN_TIMEOUT_S has not passed.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/transport/shm/shared_segment.h"

namespace dtrain::runtime {

class ShmControl {
 public:
  static constexpr std::size_t kMailboxBytes = 64 << 10;
  static constexpr int kMaxRanks = 64;
  static constexpr std::size_t kSlotBytes = 4096;  // the longest message exchange() carries

  static std::size_t segment_bytes(int size);
  // Formats a freshly created segment (rank 0 only, before the others map it).
  static void format(SharedSegment& segment, int size);

  // `rank` and `size` are the job's: every rank of the job maps this segment.
  ShmControl(SharedSegment segment, int rank, int size, std::chrono::milliseconds timeout);

  // As Transport's: rank 0 gets every rank's message (its own at [0]), the others nothing.
  std::vector<std::vector<char>> gather_to_coordinator(const std::vector<char>& message);
  // Rank 0's message on every rank.
  std::vector<char> broadcast_from_coordinator(const std::vector<char>& message);
  // Every rank's message on every rank (index = rank). Throws if `message` exceeds kSlotBytes.
  std::vector<std::vector<char>> exchange(const std::vector<char>& message);

 private:
  struct Mailbox;
  struct Slot;
  Mailbox& up(int rank) const;
  Mailbox& down(int rank) const;
  Slot& slot(int rank) const;
  void send(Mailbox& box, const std::vector<char>& message, int peer);
  std::vector<char> receive(Mailbox& box, int peer);
  // Waits until `counter` (advanced by `peer`, or by every other rank where `peer` is
  // kAnyPeer; `sleepers` counts who sleeps on it) is `value`.
  static constexpr int kAnyPeer = -1;
  void wait_for(std::atomic<std::uint32_t>& counter, std::atomic<std::uint32_t>& sleepers, std::uint32_t value,
                int peer) const;
  void check_alive(int peer) const;  // throws WorkersLostError if its process is gone

  SharedSegment segment_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  int spin_limit_;
  std::uint32_t exchange_round_ = 0;  // exchange() calls so far; the same on every rank
};

}  // namespace dtrain::runtime
