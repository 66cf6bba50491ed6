#include "runtime/cycle_summary.h"

#include <cstring>

#include "runtime/response_cache.h"
#include "runtime/message_codec.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

std::vector<char> encode(const CycleSummary& summary, std::size_t capacity) {
  std::size_t words = summary.cache_bits.size();
  while (words > 0 && summary.cache_bits[words - 1] == 0) --words;
  const auto count = static_cast<std::uint32_t>(words);
  // The layout WireWriter gives put<uint8_t> then put_vector, written in place: this runs every
  // cycle, and growing a vector field by field cost a few allocations each time.
  std::vector<char> bytes(1 + sizeof(count) + words * sizeof(std::uint64_t));
  bytes[0] = summary.needs_coordinator ? 1 : 0;
  std::memcpy(bytes.data() + 1, &count, sizeof(count));
  if (words > 0)
    std::memcpy(bytes.data() + 1 + sizeof(count), summary.cache_bits.data(), words * sizeof(std::uint64_t));
  if (bytes.size() <= capacity) return bytes;
  // Too many bits: no bits, and the coordinator's full path (5 bytes, which any slot holds).
  const std::uint32_t none = 0;
  bytes.resize(1 + sizeof(none));
  bytes[0] = 1;
  std::memcpy(bytes.data() + 1, &none, sizeof(none));
  return bytes;
}

CycleSummary decode_summary(const std::vector<char>& bytes) {
  WireReader r(bytes);
  CycleSummary summary = get_message<CycleSummary>(r);
  if (!r.done()) throw Error("dtrain: malformed negotiation summary from a peer (protocol mismatch?)");
  return summary;
}

std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<std::vector<char>>& encoded) {
  if (encoded.empty()) return std::vector<std::uint32_t>{};
  for (const std::vector<char>& bytes : encoded) {
    if (bytes != encoded.front()) return std::nullopt;
  }
  const CycleSummary summary = decode_summary(encoded.front());
  if (summary.needs_coordinator) return std::nullopt;
  return set_positions(summary.cache_bits);
}

}  // namespace dtrain::runtime
