// The negotiation's shortcut. A cycle normally takes two exchanges one after the other: every
// rank's report to rank 0, then rank 0's plan back, and rank 0 decodes N reports: O(N) at rank
// 0 each cycle. In the steady state of training every rank submits cached operations only, and
// what may run then needs no coordinator: the cached operations every rank has submitted.
// So each cycle starts with an allreduce of summaries (a rank's held cache bits, and whether it
// has anything only the coordinator can handle): the bits ANDed, the flags ORed (recursive
// doubling over the TCP mesh: log2 N steps, Horovod's cached path agrees the same way). When no
// rank needs the coordinator, every rank runs the bits all hold, in position order, and keeps
// the others for a later cycle; the second exchange is skipped. Otherwise the cycle goes on as
// before, with the full reports (every held bit in them) to rank 0.
//
// Invariant: agreed_positions() returns a plan only where every rank computes the same one and
// the coordinator holds nothing from earlier cycles (pending tensors, joined ranks), which rank
// 0 states in its summary, as it does settings to broadcast. A bit one rank holds and another
// never submits would wait forever on this path; a rank holding a bit too long therefore asks
// for the coordinator (BackgroundLoop), whose stall inspector then names the missing ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace dtrain::runtime {

struct CycleSummary {
  // The rank submitted an uncached request, a join or the shutdown, or an operation of a
  // group; rank 0 also while its coordinator holds anything or has new settings to send.
  bool needs_coordinator = false;
  std::vector<std::uint64_t> cache_bits;  // as CycleReport's
};

// Riders: across hosts a cached allreduce on the shortcut takes two exchanges, the summaries'
// and then its data's. So a rank may attach to its summary its data for a small allreduce it
// holds (a rider); the reduction of summaries carries every rank's, and where every rank's
// rider of an agreed position arrived, each rank reduces them itself in rank order: the same
// bits everywhere, one exchange instead of two. A rider dies in the combination once its
// position is not held everywhere or the cycle needs the coordinator.
struct SummaryRider {
  std::uint32_t position = 0;  // the allreduce's cache position
  std::uint32_t rank = 0;      // whose data
  std::span<const char> data;  // the rank's input, prescaled as the executor would
};

// An agreed allreduce whose data every rank's summary carried: each rank's, in rank order
// (views into the combined summary).
struct RiddenAllreduce {
  std::uint32_t position = 0;
  std::vector<std::span<const char>> by_rank;
};

// At most `capacity` bytes before the riders: a summary whose bits would not fit goes as
// needs_coordinator, without riders. The riders follow the bits, in position order. The
// encoding is canonical (no trailing zero words), so equal summaries are equal bytes.
std::vector<char> encode(const CycleSummary& summary, std::size_t capacity,
                         const std::vector<SummaryRider>& riders = {});
CycleSummary decode_summary(const std::vector<char>& bytes);

// Combines encoded summary `other` into `into`, in place (no allocation unless either carries
// riders: it runs log2 N times a cycle): needs_coordinator if either needs it, the cache bits
// both hold, the riders of both whose positions those bits keep (sorted by position, then
// rank). Associative, commutative and exact, so any order of combining N summaries (a fold,
// recursive doubling) gives every rank the same bytes. Throws dtrain::Error on a malformed
// summary or a rank's rider twice.
void combine_summaries(std::vector<char>& into, const std::vector<char>& other);

// From the combination of every rank's summary: the cache positions every rank holds, to run
// this cycle in position order, when every rank may skip the coordinator; nothing when it must
// plan. An empty result is a cycle in which nothing is ready everywhere yet.
std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<char>& combined);

// Of the agreed positions, those all `ranks` ranks sent riders for, in position order. Riders
// of one position that differ in length (ranks out of sync) are an error, on every rank alike.
std::vector<RiddenAllreduce> ridden_allreduces(const std::vector<char>& combined, int ranks);

}  // namespace dtrain::runtime
