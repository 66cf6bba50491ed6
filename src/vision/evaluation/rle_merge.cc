#include "vision/evaluation/rle_merge.h"

#include <algorithm>
#include <vector>

namespace dtrain::vision {
namespace {

uint32_t run_at(const std::vector<uint32_t>& counts, size_t i) {
  return i < counts.size() ? counts[i] : 0;
}

// Walks both run lists in step, emitting a run boundary wherever the combined
// value changes and once at the very end.
std::vector<uint32_t> merge_two(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b,
                                bool intersect) {
  std::vector<uint32_t> out;
  out.reserve(a.size() + b.size());
  uint32_t left_a = run_at(a, 0), left_b = run_at(b, 0);
  size_t next_a = 1, next_b = 1;
  bool in_a = false, in_b = false, value = false;
  uint32_t pending = 0;   // length of the output run being built
  uint32_t remaining = 1;
  while (remaining > 0) {
    const uint32_t step = std::min(left_a, left_b);
    pending += step;
    remaining = 0;
    left_a -= step;
    if (left_a == 0 && next_a < a.size()) {
      left_a = a[next_a++];
      in_a = !in_a;
    }
    remaining += left_a;
    left_b -= step;
    if (left_b == 0 && next_b < b.size()) {
      left_b = b[next_b++];
      in_b = !in_b;
    }
    remaining += left_b;
    const bool previous = value;
    value = intersect ? (in_a && in_b) : (in_a || in_b);
    if (value != previous || remaining == 0) {
      out.push_back(pending);
      pending = 0;
    }
  }
  return out;
}

}  // namespace

RunLengthMask rle_merge(std::span<const RunLengthMask> masks, bool intersect) {
  if (masks.empty()) return {};
  if (masks.size() == 1) return masks[0];
  RunLengthMask out{masks[0].height, masks[0].width, masks[0].counts};
  for (size_t i = 1; i < masks.size(); ++i) {
    if (masks[i].height != out.height || masks[i].width != out.width) return {};
    out.counts = merge_two(out.counts, masks[i].counts, intersect);
  }
  return out;
}

}  // namespace dtrain::vision
