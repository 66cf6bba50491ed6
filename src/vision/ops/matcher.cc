#include "vision/ops/matcher.h"

namespace dtrain::vision::ops {

Matcher::Matcher(double high_threshold, double low_threshold, bool allow_low_quality_matches)
    : high_threshold_(high_threshold),
      low_threshold_(low_threshold),
      allow_low_quality_matches_(allow_low_quality_matches) {
  TORCH_CHECK(low_threshold <= high_threshold, "Matcher: low_threshold (", low_threshold,
              ") must not exceed high_threshold (", high_threshold, ")");
}

at::Tensor Matcher::match(const at::Tensor& quality) const {
  TORCH_CHECK(quality.dim() == 2, "Matcher::match: quality must be [G, P] (ground truths x ", "predictions), got ",
              quality.sizes());
  TORCH_CHECK(quality.size(0) > 0,
              "Matcher::match: no ground-truth boxes available for one of the images during "
              "training (quality matrix is ",
              quality.sizes(), "); drop images without annotations or skip the matching");
  TORCH_CHECK(quality.size(1) > 0,
              "Matcher::match: no proposal boxes available for one of the images during training "
              "(quality matrix is ",
              quality.sizes(), ")");

  // Best ground truth for every prediction.
  auto [best_quality, matches] = quality.max(/*dim=*/0);
  const at::Tensor argmax_matches = allow_low_quality_matches_ ? matches.clone() : at::Tensor();

  const at::Tensor below = best_quality < low_threshold_;
  const at::Tensor between = (best_quality >= low_threshold_) & (best_quality < high_threshold_);
  matches.masked_fill_(below, kBelowLowThreshold);
  matches.masked_fill_(between, kBetweenThresholds);

  if (allow_low_quality_matches_) {
    // Every prediction that reaches some ground truth's best quality gets back
    // its argmax match (which may be another ground truth of the same quality).
    const at::Tensor best_per_gt = std::get<0>(quality.max(/*dim=*/1));
    const at::Tensor attains_best = (quality == best_per_gt.unsqueeze(1)).any(/*dim=*/0);
    matches = at::where(attains_best, argmax_matches, matches);
  }
  return matches;
}

}  // namespace dtrain::vision::ops
