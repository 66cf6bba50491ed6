// Assigns each prediction (anchor or proposal) to the ground-truth box it
// overlaps most, with torchvision's detection Matcher rules: a quality below
// low_threshold marks the prediction background, one in [low, high) marks it
// ignored, and optionally every ground truth keeps its best predictions even
// when their quality is low.
#pragma once

#include <ATen/ATen.h>

namespace dtrain::vision::ops {

class Matcher {
 public:
  static constexpr int64_t kBelowLowThreshold = -1;
  static constexpr int64_t kBetweenThresholds = -2;

  // low_threshold must not exceed high_threshold.
  Matcher(double high_threshold, double low_threshold, bool allow_low_quality_matches);

  // quality [G, P] (e.g. box_iou(gt, predictions)) -> [P] int64: the index of
  // the matched ground truth, kBelowLowThreshold or kBetweenThresholds.
  // With allow_low_quality_matches, each prediction that attains some ground
  // truth's highest quality (ties included) keeps its argmax match whatever
  // its quality. Throws c10::Error when G or P is 0, as torchvision raises in
  // training: an image without ground truth cannot be matched.
  at::Tensor match(const at::Tensor& quality) const;

  double high_threshold() const { return high_threshold_; }
  double low_threshold() const { return low_threshold_; }
  bool allow_low_quality_matches() const { return allow_low_quality_matches_; }

 private:
  double high_threshold_;
  double low_threshold_;
  bool allow_low_quality_matches_;
};

}  // namespace dtrain::vision::ops
