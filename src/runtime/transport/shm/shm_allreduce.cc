#include "runtime/transport/shm/shm_allreduce.h"

#include <sched.h>

#include <thread>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "runtime/reduction.h"

namespace dtrain::runtime {
namespace {

constexpr std::uint64_t kMagic = 0x64747261696e5348ull;  // "dtrainSH"

// One cache line per rank, so ranks announcing their arrival do not contend.
struct alignas(64) ArrivalCounter {
  std::atomic<std::uint64_t> generation;
};

struct Header {
  std::uint64_t magic;
  std::int32_t local_size;
  std::uint64_t slot_bytes;
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

std::size_t ShmAllreduce::segment_bytes(int local_size, std::size_t slot_bytes) {
  return kHeaderBytes + 2 * static_cast<std::size_t>(local_size) * slot_bytes;
}

void ShmAllreduce::format(SharedSegment& segment, int local_size, std::size_t slot_bytes) {
  if (local_size > kMaxLocalRanks) {
    throw Error("dtrain: shared-memory allreduce supports at most " + std::to_string(kMaxLocalRanks) +
                " ranks per host, got " + std::to_string(local_size));
  }
  Header* header = new (segment.data()) Header;
  header->local_size = local_size;
  header->slot_bytes = slot_bytes;
  for (auto& counter : header->arrived) counter.generation.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  header->magic = kMagic;
}

ShmAllreduce::ShmAllreduce(SharedSegment segment, int local_rank, int local_size, std::chrono::milliseconds timeout)
    : segment_(std::move(segment)), local_rank_(local_rank), local_size_(local_size),
      slot_bytes_(header_of(segment_.data())->slot_bytes), timeout_(timeout) {
  // With a core per local rank the peer we wait for is running: spin (a yield costs tens of
  // microseconds). With more ranks than cores it may be waiting for our core: yield soon.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  spin_limit_ = static_cast<unsigned>(local_size) <= cores ? 50000 : 200;
  const Header* header = header_of(segment_.data());
  if (header->magic != kMagic || header->local_size != local_size ||
      segment_bytes(local_size, slot_bytes_) > segment_.size()) {
    throw Error("dtrain: shared memory segment '" + segment_.name() + "' is not formatted for " +
                std::to_string(local_size) + " local ranks");
  }
}

char* ShmAllreduce::slot(int set, int rank) const {
  return static_cast<char*>(segment_.data()) + kHeaderBytes +
         (static_cast<std::size_t>(set) * local_size_ + static_cast<std::size_t>(rank)) * slot_bytes_;
}

void ShmAllreduce::wait_for_all(std::uint64_t generation) {
  Header* header = header_of(segment_.data());
  header->arrived[local_rank_].generation.store(generation, std::memory_order_release);
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (int r = 0; r < local_size_; ++r) {
    for (int spins = 0; header->arrived[r].generation.load(std::memory_order_acquire) < generation; ++spins) {
      if (spins < spin_limit_) {
        cpu_relax();
        continue;
      }
      sched_yield();
      if ((spins & 1023) == 0 && std::chrono::steady_clock::now() > deadline) {
        throw Error("dtrain: local rank " + std::to_string(r) + " did not reach the shared-memory barrier within " +
                    std::to_string(timeout_.count() / 1000) + " s (DTRAIN_TIMEOUT_S)");
      }
    }
  }
}

void ShmAllreduce::barrier() { wait_for_all(++generation_); }

void ShmAllreduce::allreduce(void* data, std::size_t count, DataType dtype, ReduceOp op, const ShareHook& between) {
  allreduce(std::vector<BufferPiece>{{data, count}}, dtype, op, between);
}

namespace {

// Calls fn(piece pointer, position in [begin, end), n) for the parts of the concatenation
// of `pieces` that fall in the element range [begin, end).
template <typename Fn>
void for_each_part(const std::vector<BufferPiece>& pieces, std::size_t esize, std::size_t begin, std::size_t end,
                   Fn&& fn) {
  std::size_t piece_start = 0;
  for (const auto& piece : pieces) {
    const std::size_t piece_end = piece_start + piece.count;
    const std::size_t a = std::max(begin, piece_start), b = std::min(end, piece_end);
    if (a < b) fn(static_cast<char*>(piece.data) + (a - piece_start) * esize, a - begin, b - a);
    if (piece_end >= end) break;
    piece_start = piece_end;
  }
}

}  // namespace

void ShmAllreduce::allreduce(const std::vector<BufferPiece>& pieces, DataType dtype, ReduceOp op,
                             const ShareHook& between) {
  const std::size_t esize = element_size(dtype);
  const std::size_t chunk_elements = slot_bytes_ / esize;
  std::size_t count = 0;
  for (const auto& piece : pieces) count += piece.count;
  for (std::size_t offset = 0; offset < count; offset += chunk_elements, ++chunk_) {
    const std::size_t n = std::min(chunk_elements, count - offset);
    const int set = static_cast<int>(chunk_ % 2);
    char* mine = slot(set, local_rank_);
    for_each_part(pieces, esize, offset, offset + n,
                  [&](const char* from, std::size_t at, std::size_t k) { std::memcpy(mine + at * esize, from, k * esize); });
    barrier();
    const auto [begin, end] = share(n, local_rank_, local_size_);
    if (end > begin) {
      char* target = mine + begin * esize;
      for (int r = 1; r < local_size_; ++r) {
        const int peer = (local_rank_ + r) % local_size_;
        reduce_elements(dtype, op, target, target, slot(set, peer) + begin * esize, end - begin);
      }
      if (between) between(target, end - begin);
    }
    barrier();
    for (int r = 0; r < local_size_; ++r) {
      const auto [b, e] = share(n, r, local_size_);
      if (e <= b) continue;
      const char* source = slot(set, r);
      for_each_part(pieces, esize, offset + b, offset + e, [&](char* to, std::size_t at, std::size_t k) {
        std::memcpy(to, source + (b + at) * esize, k * esize);
      });
    }
  }
}

}  // namespace dtrain::runtime
