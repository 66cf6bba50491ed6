#include "runtime/transport/shm/shm_allreduce.h"

#include <unistd.h>

#include <thread>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "runtime/reduction.h"
#include "runtime/transport/shm/peer_process.h"
#include "runtime/transport/shm/shared_futex.h"
#include "runtime/transport/buffer_pieces.h"

namespace dtrain::runtime {
namespace {

constexpr std::uint64_t kMagic = 0x64747261696e5348ull;  // "dtrainSH"

// One cache line per rank, so ranks announcing their arrival do not contend. The pid lets
// the others tell a dead rank from a slow one. `wake` (the generation's low 32 bits) is the
// futex word a waiting rank sleeps on, `sleepers` how many do.
struct alignas(64) ArrivalCounter {
  std::atomic<std::uint64_t> generation;
  std::atomic<std::uint32_t> wake;
  std::atomic<std::uint32_t> sleepers;
  std::atomic<pid_t> pid;
};

struct Header {
  std::uint64_t magic;
  std::int32_t local_size;
  ArrivalCounter arrived[ShmAllreduce::kMaxLocalRanks];
};

constexpr std::size_t kHeaderBytes = (sizeof(Header) + 4095) / 4096 * 4096;

Header* header_of(void* data) { return static_cast<Header*>(data); }

// [begin, end) of rank r's share of n elements.
std::pair<std::size_t, std::size_t> share(std::size_t n, int r, int ranks) {
  const std::size_t base = n / ranks, extra = n % ranks;
  const auto rr = static_cast<std::size_t>(r);
  const std::size_t begin = rr * base + std::min(rr, extra);
  return {begin, begin + base + (rr < extra ? 1 : 0)};
}

inline void cpu_relax() { __builtin_ia32_pause(); }

}  // namespace

std::size_t ShmAllreduce::segment_bytes(int local_size) {
  return kHeaderBytes + 2 * static_cast<std::size_t>(local_size) * kSlotBytes;
}

void ShmAllreduce::format(SharedSegment& segment, int local_size) {
  if (local_size > kMaxLocalRanks) {
    throw Error("dtrain: shared-memory allreduce supports at most " + std::to_string(kMaxLocalRanks) +
                " ranks per host, got " + std::to_string(local_size));
  }
  Header* header = new (segment.data()) Header;
  header->local_size = local_size;
  for (auto& counter : header->arrived) {
    counter.generation.store(0, std::memory_order_relaxed);
    counter.wake.store(0, std::memory_order_relaxed);
    counter.sleepers.store(0, std::memory_order_relaxed);
    counter.pid.store(0, std::memory_order_relaxed);
  }
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;
}

ShmAllreduce::ShmAllreduce(SharedSegment segment, int local_rank, int local_size, std::chrono::milliseconds timeout)
    : segment_(std::move(segment)), local_rank_(local_rank), local_size_(local_size), timeout_(timeout) {
  // A peer that is running reaches the barrier within microseconds: spin that long (a sleep
  // and wake cost tens). Longer, it is busy elsewhere or descheduled (in training the loop's
  // thread shares the core with the compute thread): sleep, so the core goes to the compute
  // thread rather than to spinning. With more ranks than cores it may be waiting for our
  // core: sleep sooner.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spin_limit_ = static_cast<unsigned>(local_size) <= cores ? 500 : 200;
  const Header* header = header_of(segment_.data());
  if (header->magic != kMagic || header->local_size != local_size || segment_bytes(local_size) > segment_.size()) {
    throw Error("dtrain: shared memory segment '" + segment_.name() + "' is not formatted for " +
                std::to_string(local_size) + " local ranks");
  }
  header_of(segment_.data())->arrived[local_rank].pid.store(::getpid(), std::memory_order_release);
}

char* ShmAllreduce::slot(int set, int rank) const {
  return static_cast<char*>(segment_.data()) + kHeaderBytes +
         (static_cast<std::size_t>(set) * local_size_ + static_cast<std::size_t>(rank)) * kSlotBytes;
}

void ShmAllreduce::wait_for_all(std::uint64_t generation) {
  Header* header = header_of(segment_.data());
  ArrivalCounter& mine = header->arrived[local_rank_];
  mine.generation.store(generation, std::memory_order_seq_cst);
  publish_and_wake(mine.wake, mine.sleepers, static_cast<std::uint32_t>(generation));
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int r = 0; r < local_size_; ++r) {
    ArrivalCounter& peer = header->arrived[r];
    auto arrived = [&] { return peer.generation.load(std::memory_order_seq_cst) >= generation; };
    for (int spins = 0; !arrived(); ++spins) {
      if (spins < spin_limit_) {
        cpu_relax();
        continue;
      }
      sleep_unless(peer.wake, peer.sleepers, arrived, std::chrono::milliseconds(10));
      if (arrived()) break;
      if (const pid_t pid = peer.pid.load(std::memory_order_acquire); process_gone(pid)) {
        throw WorkersLostError("dtrain: local rank " + std::to_string(r) + " (pid " + std::to_string(pid) +
                               ") exited during a shared-memory allreduce");
      }
      if (std::chrono::steady_clock::now() > deadline) {
        throw WorkersLostError("dtrain: local rank " + std::to_string(r) +
                               " did not reach the shared-memory barrier within " +
                               std::to_string(timeout_.count() / 1000) + " s (DTRAIN_TIMEOUT_S)");
      }
    }
  }
}

void ShmAllreduce::barrier() { wait_for_all(++generation_); }

void ShmAllreduce::allreduce(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, double scale) {
  run(pieces, dtype, op, Phase::kAllreduce, scale);
}

void ShmAllreduce::reduce_scatter(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op) {
  run(pieces, dtype, op, Phase::kReduceScatter, 1.0);
}

void ShmAllreduce::allgather(const std::vector<BufferPiece>& pieces, DataType dtype) {
  run(pieces, dtype, ReduceOp::kSum, Phase::kAllgather, 1.0);
}

std::vector<std::pair<std::size_t, std::size_t>> ShmAllreduce::my_shares(std::size_t count, DataType dtype) const {
  const std::size_t chunk_elements = kSlotBytes / element_size(dtype);
  std::vector<std::pair<std::size_t, std::size_t>> shares;
  for (std::size_t offset = 0; offset < count; offset += chunk_elements) {
    const auto [b, e] = share(std::min(chunk_elements, count - offset), local_rank_, local_size_);
    if (e > b) shares.emplace_back(offset + b, offset + e);
  }
  return shares;
}

// Each chunk, in two barriers' steps. To reduce: every rank puts in its slot the parts of its
// data that the others reduce (its own share it reads where it is); each rank then combines
// its share from its own data and the others' slots, scales it, and writes the result both
// into its data and into its slot; each finally copies the others' results out of their
// slots. So every byte is copied in once and out once, and the result is scaled in the pass
// that combines the last contribution rather than in a pass of its own. To gather: every rank
// puts its own share in its slot and copies the others' out.
void ShmAllreduce::run(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op, Phase phase, double scale) {
  const std::size_t esize = element_size(dtype);
  const std::size_t chunk_elements = kSlotBytes / esize;
  const std::size_t count = total_count(pieces);
  for (std::size_t offset = 0; offset < count; offset += chunk_elements, ++chunk_) {
    const std::size_t n = std::min(chunk_elements, count - offset);
    const int set = static_cast<int>(chunk_ % 2);
    char* mine = slot(set, local_rank_);
    const auto [begin, end] = share(n, local_rank_, local_size_);
    auto copy_in = [&](std::size_t b, std::size_t e) {
      for_each_part(pieces, esize, offset + b, offset + e, [&](const char* from, std::size_t at, std::size_t k) {
        std::memcpy(mine + (b + at) * esize, from, k * esize);
      });
    };
    if (phase == Phase::kAllgather) {
      copy_in(begin, end);
    } else {
      copy_in(0, begin);
      copy_in(end, n);
    }
    barrier();
    if (phase != Phase::kAllgather) {
      for_each_part(pieces, esize, offset + begin, offset + end, [&](char* data, std::size_t at, std::size_t k) {
        char* result = mine + (begin + at) * esize;
        if (local_size_ == 1) {  // nobody reads the slot
          scale_elements(dtype, data, k, scale);
          return;
        }
        for (int r = 1; r < local_size_; ++r) {
          const int peer = (local_rank_ + r) % local_size_;
          const void* so_far = r == 1 ? data : result;
          const char* theirs = slot(set, peer) + (begin + at) * esize;
          if (r + 1 < local_size_) {
            reduce_elements(dtype, op, result, so_far, theirs, k);
          } else {
            reduce_and_scale(dtype, op, result, so_far, theirs, k, scale);
          }
        }
        std::memcpy(data, result, k * esize);
      });
    }
    barrier();                                     // shares reduced (or published) before anyone copies them
    if (phase == Phase::kReduceScatter) continue;  // only this rank's share, for the hierarchical step
    for (int r = 0; r < local_size_; ++r) {
      const auto [b, e] = share(n, r, local_size_);
      if (e <= b || r == local_rank_) continue;
      const char* source = slot(set, r);
      for_each_part(pieces, esize, offset + b, offset + e, [&](char* to, std::size_t at, std::size_t k) {
        std::memcpy(to, source + (b + at) * esize, k * esize);
      });
    }
  }
}

}  // namespace dtrain::runtime
