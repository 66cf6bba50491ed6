#include "vision/coco/rle_string.h"

#include <string>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

constexpr int kFirstChar = 48;          // '0'
constexpr int kContinuationBit = 0x20;  // more characters follow
constexpr int kSignBit = 0x10;          // top payload bit of the last character

// Counts from index 3 on are stored relative to the count two places back.
constexpr size_t kFirstDeltaIndex = 3;

}  // namespace

std::string rle_counts_to_string(const RunLengthMask& mask) {
  std::string out;
  out.reserve(mask.counts.size() * 2);
  for (size_t i = 0; i < mask.counts.size(); ++i) {
    int64_t value = mask.counts[i];
    if (i >= kFirstDeltaIndex) value -= mask.counts[i - 2];
    for (;;) {
      int chunk = static_cast<int>(value & 0x1f);
      value >>= 5;  // arithmetic shift keeps the sign
      // Stop once the remaining bits are pure sign extension of this chunk.
      const bool more = (chunk & kSignBit) ? value != -1 : value != 0;
      if (more) chunk |= kContinuationBit;
      out.push_back(static_cast<char>(chunk + kFirstChar));
      if (!more) break;
    }
  }
  return out;
}

RunLengthMask rle_from_counts_string(std::string_view counts, uint32_t height, uint32_t width) {
  RunLengthMask out{height, width, {}};
  const auto* text = reinterpret_cast<const unsigned char*>(counts.data());
  const size_t size = counts.size();
  // Every character without the continuation bit ends a count; in '0'..'o'
  // those are the ones below '0' + 0x20 = 'P'. Allocate once, exactly. (A
  // string with other characters throws before it writes past the counts of
  // the valid characters ahead of them, which are all counted.)
  size_t numbers = 0;
  for (size_t i = 0; i < size; ++i) numbers += text[i] < kFirstChar + kContinuationBit;
  out.counts.resize(numbers);
  uint32_t* decoded = out.counts.data();
  size_t m = 0;
  size_t p = 0;
  while (p < size) {
    int64_t value = 0;
    int shift = 0;
    for (;;) {
      if (p >= size) {
        throw CocoError("RLE counts string ends inside a number at character " + std::to_string(p));
      }
      const unsigned chunk = text[p] - unsigned{kFirstChar};  // wraps below '0'
      if (chunk > 63) {
        throw CocoError("RLE counts string has an invalid character at position " + std::to_string(p) +
                        " (expected '0'..'o')");
      }
      if (shift > 58) throw CocoError("RLE counts string has a number that is too long");
      value |= static_cast<int64_t>(chunk & 0x1f) << shift;
      shift += 5;
      ++p;
      if (!(chunk & kContinuationBit)) {
        if (chunk & kSignBit) value |= -(int64_t{1} << shift);  // sign-extend
        break;
      }
    }
    if (m >= kFirstDeltaIndex) value += decoded[m - 2];
    decoded[m++] = static_cast<uint32_t>(value);
  }
  return out;
}

}  // namespace dtrain::vision
