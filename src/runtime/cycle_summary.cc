#include "runtime/cycle_summary.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>

#include "runtime/message_codec.h"
#include "runtime/response_cache.h"
#include "runtime/wire.h"

namespace dtrain::runtime {

namespace {

// The layout: the flag (1 byte), the word count (4), the words (8 each), the rider count (4),
// then each rider: position, rank and length (4 each) and its bytes.
constexpr std::size_t kHeaderBytes = 1 + sizeof(std::uint32_t);
constexpr std::size_t kRiderHeaderBytes = 3 * sizeof(std::uint32_t);

[[noreturn]] void malformed(const char* what) {
  throw Error(std::string("dtrain: malformed negotiation summary from a peer (") + what + "; protocol mismatch?)");
}

std::uint32_t read_u32(const std::vector<char>& bytes, std::size_t at) {
  std::uint32_t value = 0;
  std::memcpy(&value, bytes.data() + at, sizeof(value));
  return value;
}

void write_u32(std::vector<char>& bytes, std::size_t at, std::uint32_t value) {
  std::memcpy(bytes.data() + at, &value, sizeof(value));
}

struct RiderAt {
  std::uint32_t position, rank, length;
  std::size_t offset;  // of its bytes
};

// An encoded summary's parts, checked against its length.
struct Layout {
  std::uint32_t words = 0;
  std::vector<RiderAt> riders;
};

std::size_t riders_offset(std::uint32_t words) { return kHeaderBytes + std::size_t{words} * sizeof(std::uint64_t); }

Layout parse(const std::vector<char>& bytes) {
  Layout layout;
  if (bytes.size() < kHeaderBytes) malformed("too short");
  layout.words = read_u32(bytes, 1);
  std::size_t at = riders_offset(layout.words);
  if (bytes.size() < at + sizeof(std::uint32_t)) malformed("bits past its end");
  const std::uint32_t count = read_u32(bytes, at);
  at += sizeof(std::uint32_t);
  for (std::uint32_t i = 0; i < count; ++i) {
    if (bytes.size() < at + kRiderHeaderBytes) malformed("a rider past its end");
    RiderAt rider{read_u32(bytes, at), read_u32(bytes, at + 4), read_u32(bytes, at + 8), at + kRiderHeaderBytes};
    if (bytes.size() - rider.offset < rider.length) malformed("a rider's bytes past its end");
    at = rider.offset + rider.length;
    layout.riders.push_back(rider);
  }
  if (at != bytes.size()) malformed("bytes after its end");
  return layout;
}

bool holds(const std::vector<char>& bytes, std::uint32_t words, std::uint32_t position) {
  if (position / 64 >= words) return false;
  std::uint64_t word = 0;
  std::memcpy(&word, bytes.data() + kHeaderBytes + (position / 64) * sizeof(word), sizeof(word));
  return (word >> (position % 64)) & 1;
}

void append_rider(std::vector<char>& out, std::uint32_t position, std::uint32_t rank, const char* data,
                  std::uint32_t length) {
  const std::size_t at = out.size();
  out.resize(at + kRiderHeaderBytes + length);
  write_u32(out, at, position);
  write_u32(out, at + 4, rank);
  write_u32(out, at + 8, length);
  if (length) std::memcpy(out.data() + at + kRiderHeaderBytes, data, length);
}

}  // namespace

std::vector<char> encode(const CycleSummary& summary, std::size_t capacity, const std::vector<SummaryRider>& riders) {
  std::size_t words = summary.cache_bits.size();
  while (words > 0 && summary.cache_bits[words - 1] == 0) --words;
  if (riders_offset(static_cast<std::uint32_t>(words)) + sizeof(std::uint32_t) > capacity) {
    // Too many bits: no bits, no riders, and the coordinator's full path (9 bytes).
    std::vector<char> bytes(riders_offset(0) + sizeof(std::uint32_t), 0);
    bytes[0] = 1;
    return bytes;
  }
  // Written in place: this runs every cycle, and growing a vector field by field cost a few
  // allocations each time.
  std::size_t total = riders_offset(static_cast<std::uint32_t>(words)) + sizeof(std::uint32_t);
  for (const SummaryRider& rider : riders) total += kRiderHeaderBytes + rider.data.size();
  std::vector<char> bytes;
  bytes.reserve(total);
  bytes.resize(riders_offset(static_cast<std::uint32_t>(words)) + sizeof(std::uint32_t));
  bytes[0] = summary.needs_coordinator ? 1 : 0;
  write_u32(bytes, 1, static_cast<std::uint32_t>(words));
  if (words > 0) std::memcpy(bytes.data() + kHeaderBytes, summary.cache_bits.data(), words * sizeof(std::uint64_t));
  write_u32(bytes, riders_offset(static_cast<std::uint32_t>(words)), static_cast<std::uint32_t>(riders.size()));
  for (const SummaryRider& rider : riders) {
    append_rider(bytes, rider.position, rider.rank, rider.data.data(), static_cast<std::uint32_t>(rider.data.size()));
  }
  return bytes;
}

CycleSummary decode_summary(const std::vector<char>& bytes) {
  parse(bytes);  // the whole of it well formed, riders included
  WireReader r(bytes);
  return get_message<CycleSummary>(r);
}

void combine_summaries(std::vector<char>& into, const std::vector<char>& other) {
  const Layout mine = parse(into);
  const Layout theirs = parse(other);
  std::uint32_t words = std::min(mine.words, theirs.words);
  const bool needs_coordinator = into[0] != 0 || other[0] != 0;
  into[0] = needs_coordinator ? 1 : 0;
  for (std::uint32_t w = 0; w < words; ++w) {
    std::uint64_t a = 0, b = 0;
    char* at = into.data() + kHeaderBytes + w * sizeof(a);
    std::memcpy(&a, at, sizeof(a));
    std::memcpy(&b, other.data() + kHeaderBytes + w * sizeof(b), sizeof(b));
    a &= b;
    std::memcpy(at, &a, sizeof(a));
  }
  // Canonical, as encode(): no trailing zero words.
  const auto word_is_zero = [&](std::uint32_t w) {
    const char* at = into.data() + kHeaderBytes + (w - 1) * sizeof(std::uint64_t);
    return std::all_of(at, at + sizeof(std::uint64_t), [](char c) { return c == 0; });
  };
  while (words > 0 && word_is_zero(words)) --words;
  write_u32(into, 1, words);
  const std::size_t bits_end = riders_offset(words);

  // The riders the combined bits keep, from both sides, in (position, rank) order.
  struct Kept {
    RiderAt rider;
    const std::vector<char>* from;
  };
  std::vector<Kept> kept;
  if (!needs_coordinator) {
    for (const RiderAt& r : mine.riders) {
      if (holds(into, words, r.position)) kept.push_back({r, &into});
    }
    for (const RiderAt& r : theirs.riders) {
      if (holds(into, words, r.position)) kept.push_back({r, &other});
    }
  }
  if (kept.empty()) {  // the usual case: no allocation
    into.resize(bits_end + sizeof(std::uint32_t));
    write_u32(into, bits_end, 0);
    return;
  }
  const auto key = [](const Kept& k) { return std::tie(k.rider.position, k.rider.rank); };
  std::sort(kept.begin(), kept.end(), [&](const Kept& a, const Kept& b) { return key(a) < key(b); });
  for (std::size_t i = 1; i < kept.size(); ++i) {
    if (key(kept[i - 1]) == key(kept[i])) malformed("a rank's rider twice");
  }
  std::vector<char> out(into.begin(), into.begin() + static_cast<std::ptrdiff_t>(bits_end));
  out.resize(bits_end + sizeof(std::uint32_t));
  write_u32(out, bits_end, static_cast<std::uint32_t>(kept.size()));
  for (const Kept& k : kept) {
    append_rider(out, k.rider.position, k.rider.rank, k.from->data() + k.rider.offset, k.rider.length);
  }
  into.swap(out);
}

std::optional<std::vector<std::uint32_t>> agreed_positions(const std::vector<char>& combined) {
  const CycleSummary summary = decode_summary(combined);
  if (summary.needs_coordinator) return std::nullopt;
  return set_positions(summary.cache_bits);
}

std::vector<RiddenAllreduce> ridden_allreduces(const std::vector<char>& combined, int ranks) {
  const Layout layout = parse(combined);
  std::vector<RiddenAllreduce> ridden;
  if (combined[0] != 0) return ridden;
  const std::vector<RiderAt>& riders = layout.riders;
  for (std::size_t first = 0; first < riders.size();) {
    std::size_t end = first;
    while (end < riders.size() && riders[end].position == riders[first].position) ++end;
    const std::uint32_t position = riders[first].position;
    // Sorted by rank and without repeats (combine_summaries): all ranks are there when there
    // are `ranks` of them numbered 0 to ranks - 1.
    const bool everyone =
        static_cast<int>(end - first) == ranks && riders[end - 1].rank == static_cast<std::uint32_t>(ranks - 1);
    if (everyone && holds(combined, layout.words, position)) {
      RiddenAllreduce allreduce{position, {}};
      for (std::size_t i = first; i < end; ++i) {
        if (riders[i].length != riders[first].length) {
          throw Error("dtrain: the ranks' data for the allreduce at cache position " + std::to_string(position) +
                      " differ in length (" + std::to_string(riders[first].length) + " and " +
                      std::to_string(riders[i].length) + " bytes; ranks out of sync)");
        }
        allreduce.by_rank.emplace_back(combined.data() + riders[i].offset, riders[i].length);
      }
      ridden.push_back(std::move(allreduce));
    }
    first = end;
  }
  return ridden;
}

}  // namespace dtrain::runtime
