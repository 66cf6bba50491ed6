#include "vision/coco/rle_merge.h"

#include <algorithm>
#include <vector>

#include "vision/coco/run_pair_walker.h"

namespace dtrain::vision {
namespace {

// Emits a run boundary wherever the combined value changes, and the last run at the end.
std::vector<uint32_t> merge_two(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b, bool intersect) {
  std::vector<uint32_t> out;
  out.reserve(a.size() + b.size());
  RunPairWalker walker(a, b);
  bool value = false;    // COCO's counts start with a run of zeros
  uint32_t pending = 0;  // length of the output run being built
  uint32_t length;
  bool in_a, in_b;
  while (walker.next(&length, &in_a, &in_b)) {
    const bool v = intersect ? (in_a && in_b) : (in_a || in_b);
    if (v != value && length > 0) {
      out.push_back(pending);
      pending = 0;
      value = v;
    }
    pending += length;
  }
  out.push_back(pending);
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
