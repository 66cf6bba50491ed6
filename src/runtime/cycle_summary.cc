#include "runtime/cycle_summary.h"

#include <algorithm>
#include <cstring>

#include "runtime/response_cache.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

namespace {
// Bits as words without the trailing zero words, so "the same bits" is the same vector
// whatever length the sender's bit vector had grown to.
std::vector<std::uint64_t> trimmed(std::vector<std::uint64_t> bits) {
  while (!bits.empty() && bits.back() == 0) bits.pop_back();
  return bits;
}

// Equal as bit sets: a missing word counts as zero.
bool same_bits(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  const std::size_t words = std::max(a.size(), b.size());
  for (std::size_t w = 0; w < words; ++w) {
    if ((w < a.size() ? a[w] : 0) != (w < b.size() ? b[w] : 0)) return false;
  }
  return true;
}
}  // namespace

std::vector<char> encode(const CycleSummary& summary, std::size_t capacity) {
  std::size_t words = summary.cache_bits.size();
  while (words > 0 && summary.cache_bits[words - 1] == 0) --words;
  const auto count = static_cast<std::uint32_t>(words);
  // The layout WireWriter gives put<uint8_t> then put_vector, written in place: this runs every
  // cycle, and growing a vector field by field cost a few allocations each time.
  std::vector<char> bytes(1 + sizeof(count) + words * sizeof(std::uint64_t));
  bytes[0] = summary.needs_coordinator ? 1 : 0;
  std::memcpy(bytes.data() + 1, &count, sizeof(count));
  if (words > 0) std::memcpy(bytes.data() + 1 + sizeof(count), summary.cache_bits.data(), words * sizeof(std::uint64_t));
  if (bytes.size() <= capacity) return bytes;
  WireWriter overflow;
  overflow.put<std::uint8_t>(1);
  overflow.put_vector(std::vector<std::uint64_t>{});
  return overflow.take();
}

CycleSummary decode_summary(const std::vector<char>& bytes) {
  WireReader r(bytes);
  CycleSummary summary;
  summary.needs_coordinator = r.get<std::uint8_t>() != 0;
  summary.cache_bits = trimmed(r.get_vector<std::uint64_t>());
  if (!r.done()) throw Error("dtrain: malformed negotiation summary from a peer (protocol mismatch?)");
  return summary;
}

std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<CycleSummary>& summaries) {
  for (const CycleSummary& summary : summaries) {
    if (summary.needs_coordinator) return std::nullopt;
    if (!same_bits(summary.cache_bits, summaries.front().cache_bits)) return std::nullopt;
  }
  if (summaries.empty()) return std::vector<std::uint32_t>{};
  return set_positions(summaries.front().cache_bits);
}

}  // namespace dtrain::runtime
