// The negotiation's shortcut. A cycle normally takes two exchanges one after the other: every
// rank's report to rank 0, then rank 0's plan back. In the steady state of training every
// rank submits the same cached operations, and rank 0's plan is predictable from that alone:
// run those cache entries in position order. So where the transport can give every rank
// everyone's short message in one step (shared memory, Transport::summary_capacity), each
// cycle starts with an exchange of summaries (a rank's cache bits, and whether it has
// anything only the coordinator can handle); when no rank has and all bits are equal, every
// rank plans the cycle itself and the second exchange is skipped. Otherwise the cycle goes
// on as before, with the full reports to rank 0.
//
// Invariant: agreed_positions() returns a plan only where the coordinator, given the same
// reports, would return the same one: it needs every rank to report the same cache bits and
// nothing else, and the coordinator to hold nothing from earlier cycles (pending tensors, joined
// ranks) -- which rank 0 states in its summary, as it does settings to broadcast.
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

// From every rank's encoded summary: the cache positions to run this cycle, in order, when
// every rank may skip the coordinator; nothing when it must plan. An empty result is an agreed
// idle cycle. (Bytes, not decoded summaries: this runs every cycle, and comparing the bytes
// decodes one summary instead of one per rank.)
std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<std::vector<char>>& encoded);

}  // namespace dtrain::runtime
