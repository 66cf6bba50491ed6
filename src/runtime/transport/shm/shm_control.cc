#include "runtime/transport/shm/shm_control.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "dtrain/dtrain.h"
#include "runtime/transport/shm/peer_process.h"
#include "runtime/transport/shm/shared_futex.h"

namespace dtrain::runtime {

// The counters sit on cache lines of their own: the writer and the reader each write one.
struct ShmControl::Mailbox {
  alignas(64) std::atomic<std::uint32_t> posted;
  std::atomic<std::uint32_t> posted_sleepers;
  alignas(64) std::atomic<std::uint32_t> taken;
  std::atomic<std::uint32_t> taken_sleepers;
  alignas(64) std::uint64_t total;  // bytes of the whole message
  std::uint64_t length;             // bytes of the piece in `data`
  char data[kMailboxBytes];
};

// Written by its owner, read by every other rank; counters on lines of their own as above.
struct ShmControl::Slot {
  alignas(64) std::atomic<std::uint32_t> round;
  std::atomic<std::uint32_t> round_sleepers;
  alignas(64) std::atomic<std::uint32_t> reads;
  std::atomic<std::uint32_t> reads_sleepers;
  alignas(64) std::uint64_t length;
  char data[kSlotBytes];
};

namespace {

constexpr std::uint64_t kControlMagic = 0x6474726e43544c31ull;  // "dtrnCTL1"

struct ControlHeader {
  std::uint64_t magic;
  std::int32_t size;
  std::atomic<std::int32_t> pid[ShmControl::kMaxRanks];  // each rank's process, to tell a dead peer
};

constexpr std::size_t kControlHeaderBytes = (sizeof(ControlHeader) + 4095) / 4096 * 4096;

ControlHeader* control_header_of(void* data) { return static_cast<ControlHeader*>(data); }

}  // namespace

std::size_t ShmControl::segment_bytes(int size) {
  return kControlHeaderBytes + 2 * static_cast<std::size_t>(size) * sizeof(Mailbox) +
         static_cast<std::size_t>(size) * sizeof(Slot);
}

void ShmControl::format(SharedSegment& segment, int size) {
  if (size > kMaxRanks) {
    throw Error("dtrain: shared-memory negotiation supports at most " + std::to_string(kMaxRanks) + " ranks, got " +
                std::to_string(size));
  }
  ControlHeader* header = new (segment.data()) ControlHeader;
  header->size = size;
  for (auto& pid : header->pid) pid.store(0, std::memory_order_relaxed);
  char* boxes = static_cast<char*>(segment.data()) + kControlHeaderBytes;
  for (int i = 0; i < 2 * size; ++i) {
    auto* box = new (boxes + i * sizeof(Mailbox)) Mailbox;
    box->posted.store(0, std::memory_order_relaxed);
    box->posted_sleepers.store(0, std::memory_order_relaxed);
    box->taken.store(0, std::memory_order_relaxed);
    box->taken_sleepers.store(0, std::memory_order_relaxed);
  }
  char* slots = boxes + 2 * size * sizeof(Mailbox);
  for (int i = 0; i < size; ++i) {
    auto* slot = new (slots + i * sizeof(Slot)) Slot;
    slot->round.store(0, std::memory_order_relaxed);
    slot->round_sleepers.store(0, std::memory_order_relaxed);
    slot->reads.store(0, std::memory_order_relaxed);
    slot->reads_sleepers.store(0, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kControlMagic;
}

ShmControl::ShmControl(SharedSegment segment, int rank, int size, std::chrono::milliseconds timeout)
    : segment_(std::move(segment)), rank_(rank), size_(size), timeout_(timeout) {
  ControlHeader* header = control_header_of(segment_.data());
  if (header->magic != kControlMagic || header->size != size || segment_bytes(size) > segment_.size()) {
    throw Error("dtrain: shared memory segment '" + segment_.name() + "' is not formatted for " + std::to_string(size) +
                " ranks");
  }
  header->pid[rank].store(static_cast<std::int32_t>(getpid()), std::memory_order_release);
  // With a core per rank the peer we wait for is running and answers within microseconds:
  // spin that long. With more ranks than cores it may be waiting for our core: sleep soon.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spin_limit_ = static_cast<unsigned>(size) <= cores ? 500 : 100;
}

ShmControl::Mailbox& ShmControl::up(int rank) const {
  return *reinterpret_cast<Mailbox*>(static_cast<char*>(segment_.data()) + kControlHeaderBytes +
                                     rank * sizeof(Mailbox));
}

ShmControl::Mailbox& ShmControl::down(int rank) const {
  return *reinterpret_cast<Mailbox*>(static_cast<char*>(segment_.data()) + kControlHeaderBytes +
                                     (size_ + rank) * sizeof(Mailbox));
}

ShmControl::Slot& ShmControl::slot(int rank) const {
  return *reinterpret_cast<Slot*>(static_cast<char*>(segment_.data()) + kControlHeaderBytes +
                                  2 * size_ * sizeof(Mailbox) + rank * sizeof(Slot));
}

void ShmControl::check_alive(int peer) const {
  const pid_t peer_pid = control_header_of(segment_.data())->pid[peer].load(std::memory_order_acquire);
  if (process_gone(peer_pid)) {
    throw WorkersLostError("dtrain: rank " + std::to_string(peer) + " (pid " + std::to_string(peer_pid) +
                           ") exited during negotiation");
  }
}

void ShmControl::wait_for(std::atomic<std::uint32_t>& counter, std::atomic<std::uint32_t>& sleepers,
                          std::uint32_t value, int peer) const {
  for (int spins = 0; spins < spin_limit_; ++spins) {
    if (counter.load(std::memory_order_acquire) == value) return;
    __builtin_ia32_pause();
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  while (true) {
    sleep_unless(
        counter, sleepers, [&] { return counter.load(std::memory_order_seq_cst) == value; },
        std::chrono::milliseconds(10));
    if (counter.load(std::memory_order_acquire) == value) return;
    if (peer != kAnyPeer) {
      check_alive(peer);
    } else {
      for (int other = 0; other < size_; ++other) {
        if (other != rank_) check_alive(other);
      }
    }
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string seconds = std::to_string(timeout_.count() / 1000) + " s (DTRAIN_TIMEOUT_S)";
      if (peer == kAnyPeer) {
        throw WorkersLostError("dtrain: rank " + std::to_string(rank_) +
                               "'s negotiation summary was not read by every other rank within " + seconds);
      }
      throw WorkersLostError("dtrain: no negotiation message from rank " + std::to_string(peer) + " within " + seconds);
    }
  }
}

void ShmControl::send(Mailbox& box, const std::vector<char>& message, int peer) {
  std::uint32_t posted = box.posted.load(std::memory_order_relaxed);  // only this rank writes it
  std::size_t offset = 0;
  do {
    wait_for(box.taken, box.taken_sleepers, posted, peer);  // the previous piece was read
    const std::size_t length = std::min(kMailboxBytes, message.size() - offset);
    box.total = message.size();
    box.length = length;
    if (length > 0) std::memcpy(box.data, message.data() + offset, length);
    publish_and_wake(box.posted, box.posted_sleepers, ++posted);
    offset += length;
  } while (offset < message.size());
}

std::vector<char> ShmControl::receive(Mailbox& box, int peer) {
  std::uint32_t taken = box.taken.load(std::memory_order_relaxed);  // only this rank writes it
  std::vector<char> message;
  do {
    wait_for(box.posted, box.posted_sleepers, taken + 1, peer);
    if (message.empty()) message.reserve(box.total);
    message.insert(message.end(), box.data, box.data + box.length);
    const bool complete = message.size() >= box.total;  // read before the writer may reuse the box
    publish_and_wake(box.taken, box.taken_sleepers, ++taken);
    if (complete) break;
  } while (true);
  return message;
}

std::vector<std::vector<char>> ShmControl::gather_to_coordinator(const std::vector<char>& message) {
  if (rank_ != 0) {
    send(up(rank_), message, 0);
    return {};
  }
  std::vector<std::vector<char>> all(size_);
  all[0] = message;
  for (int peer = 1; peer < size_; ++peer) all[peer] = receive(up(peer), peer);
  return all;
}

std::vector<char> ShmControl::broadcast_from_coordinator(const std::vector<char>& message) {
  if (rank_ != 0) return receive(down(rank_), 0);
  for (int peer = 1; peer < size_; ++peer) send(down(peer), message, peer);
  return message;
}

// Each rank writes its own slot, then reads the others'. A rank can be at most one round
// ahead: it overwrites its slot only once every reader has taken the previous message, and a
// reader still in that round finds every slot written for it (their owners wrote before
// reading), so nobody waits for a rank that waits in turn.
std::vector<std::vector<char>> ShmControl::exchange(const std::vector<char>& message) {
  if (message.size() > kSlotBytes) {
    throw Error("dtrain: a negotiation summary of " + std::to_string(message.size()) + " bytes exceeds the " +
                std::to_string(kSlotBytes) + " bytes of a shared-memory slot");
  }
  const std::uint32_t readers = static_cast<std::uint32_t>(size_ - 1);
  Slot& mine = slot(rank_);
  wait_for(mine.reads, mine.reads_sleepers, exchange_round_ * readers, kAnyPeer);
  mine.length = message.size();
  if (!message.empty()) std::memcpy(mine.data, message.data(), message.size());
  ++exchange_round_;
  publish_and_wake(mine.round, mine.round_sleepers, exchange_round_);

  std::vector<std::vector<char>> all(size_);
  all[rank_] = message;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    Slot& theirs = slot(peer);
    wait_for(theirs.round, theirs.round_sleepers, exchange_round_, peer);
    all[peer].assign(theirs.data, theirs.data + theirs.length);
    const std::uint32_t read = theirs.reads.fetch_add(1, std::memory_order_seq_cst) + 1;
    if (read == exchange_round_ * readers && theirs.reads_sleepers.load(std::memory_order_seq_cst) > 0) {
      shared_futex_wake_all(theirs.reads);  // the last reader wakes the owner if it sleeps
    }
  }
  return all;
}

}  // namespace dtrain::runtime
