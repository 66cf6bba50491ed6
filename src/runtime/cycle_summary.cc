#include "runtime/cycle_summary.h"

#include <algorithm>
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

namespace {

constexpr std::size_t kHeaderBytes = 1 + sizeof(std::uint32_t);  // the flag, then the word count

// The number of bit words in an encoded summary, checked against its length.
std::uint32_t word_count(const std::vector<char>& bytes) {
  std::uint32_t count = 0;
  if (bytes.size() >= kHeaderBytes) std::memcpy(&count, bytes.data() + 1, sizeof(count));
  if (bytes.size() < kHeaderBytes || bytes.size() != kHeaderBytes + std::size_t{count} * sizeof(std::uint64_t)) {
    throw Error("dtrain: malformed negotiation summary from a peer (protocol mismatch?)");
  }
  return count;
}

}  // namespace

void combine_summaries(std::vector<char>& into, const std::vector<char>& other) {
  std::uint32_t words = std::min(word_count(into), word_count(other));
  into[0] = (into[0] != 0 || other[0] != 0) ? 1 : 0;
  for (std::uint32_t w = 0; w < words; ++w) {
    std::uint64_t mine = 0, theirs = 0;
    char* at = into.data() + kHeaderBytes + w * sizeof(mine);
    std::memcpy(&mine, at, sizeof(mine));
    std::memcpy(&theirs, other.data() + kHeaderBytes + w * sizeof(theirs), sizeof(theirs));
    mine &= theirs;
    std::memcpy(at, &mine, sizeof(mine));
  }
  // Canonical, as encode(): no trailing zero words.
  const auto word_is_zero = [&](std::uint32_t w) {
    const char* at = into.data() + kHeaderBytes + (w - 1) * sizeof(std::uint64_t);
    return std::all_of(at, at + sizeof(std::uint64_t), [](char c) { return c == 0; });
  };
  while (words > 0 && word_is_zero(words)) --words;
  into.resize(kHeaderBytes + std::size_t{words} * sizeof(std::uint64_t));
  std::memcpy(into.data() + 1, &words, sizeof(words));
}

std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<char>& combined) {
  const CycleSummary summary = decode_summary(combined);
  if (summary.needs_coordinator) return std::nullopt;
  return set_positions(summary.cache_bits);
}

}  // namespace dtrain::runtime
