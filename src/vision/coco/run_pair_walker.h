// Walks two run-length masks of the same size in lockstep, segment by segment: each segment
// is a stretch of pixels over which neither mask changes value. IoU adds segments up; merging
// turns them back into runs. (COCO's counts start with a run of zeros, which may be empty.)
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dtrain::vision {

class RunPairWalker {
 public:
  RunPairWalker(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b)
      : a_(a), b_(b), left_a_(a.empty() ? 0 : a[0]), left_b_(b.empty() ? 0 : b[0]) {}

  // The next segment: its length and whether each mask is set over it. False when both
  // masks are exhausted. Segments may have length 0 (a mask starting with set pixels).
  bool next(uint32_t* length, bool* in_a, bool* in_b) {
    if (done_) return false;
    *length = std::min(left_a_, left_b_);
    *in_a = in_a_;
    *in_b = in_b_;
    advance(left_a_, next_a_, in_a_, a_, *length);
    advance(left_b_, next_b_, in_b_, b_, *length);
    done_ = left_a_ + left_b_ == 0;
    return true;
  }

 private:
  static void advance(uint32_t& left, std::size_t& next, bool& in, const std::vector<uint32_t>& counts, uint32_t step) {
    left -= step;
    if (left == 0 && next < counts.size()) {
      left = counts[next++];
      in = !in;
    }
  }

  const std::vector<uint32_t>& a_;
  const std::vector<uint32_t>& b_;
  uint32_t left_a_, left_b_;
  std::size_t next_a_ = 1, next_b_ = 1;
  bool in_a_ = false, in_b_ = false, done_ = false;
};

}  // namespace dtrain::vision
