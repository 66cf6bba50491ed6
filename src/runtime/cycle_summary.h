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
#include <vector>

namespace dtrain::runtime {

struct CycleSummary {
  // The rank submitted an uncached request, a join or the shutdown, or an operation of a
  // group; rank 0 also while its coordinator holds anything or has new settings to send.
  bool needs_coordinator = false;
  std::vector<std::uint64_t> cache_bits;  // as CycleReport's
};

// At most `capacity` bytes: a summary whose bits would not fit goes as needs_coordinator.
// The encoding is canonical (no trailing zero words), so equal summaries are equal bytes.
std::vector<char> encode(const CycleSummary& summary, std::size_t capacity);
CycleSummary decode_summary(const std::vector<char>& bytes);

// Combines encoded summary `other` into `into`, in place (no allocation: it runs log2 N times a
// cycle): needs_coordinator if either needs it, the cache bits both hold. Associative,
// commutative and exact, so any order of combining N summaries (a fold, recursive doubling)
// gives every rank the same bytes. Throws dtrain::Error on a malformed summary.
void combine_summaries(std::vector<char>& into, const std::vector<char>& other);

// From the combination of every rank's summary: the cache positions every rank holds, to run
// this cycle in position order, when every rank may skip the coordinator; nothing when it must
// plan. An empty result is a cycle in which nothing is ready everywhere yet.
std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<char>& combined);

}  // namespace dtrain::runtime
