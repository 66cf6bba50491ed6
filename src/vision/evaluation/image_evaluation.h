#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vision/coco/coco_annotation.h"
#include "vision/evaluation/evaluation_params.h"

namespace dtrain::vision {

// What became of a detection at one IoU threshold and area range.
enum class DetectionOutcome : uint8_t {
  kFalsePositive = 0,
  kTruePositive = 1,
  kIgnored = 2,  // matched a crowd / out-of-range object, or itself out of range
};

// COCOeval.evaluateImg for one image and one category, for every area range
// at once. Absent (`present` false) when the pair has neither ground truth nor
// detections, like pycocotools' None entries.
struct ImageCategoryEvaluation {
  bool present = false;
  std::vector<double> scores;  // kept detections, best first (stable), at most max_detections.back()
  // outcomes[(a * T + t) * D + d] for area range a, IoU threshold t, detection d.
  std::vector<DetectionOutcome> outcomes;
  std::vector<uint32_t> counted_gt;  // per area range: ground truths that are not ignored

  DetectionOutcome outcome(size_t area, size_t threshold, size_t detection, size_t thresholds) const {
    return outcomes[(area * thresholds + threshold) * scores.size() + detection];
  }
};

// Matches detections to ground truths greedily, best score first, at each
// IoU threshold, with COCO's rules: a ground truth matches once unless it is
// a crowd; a detection prefers a regular ground truth and only falls back to
// ignored ones (crowds, out-of-range areas) when none is left; ground truths
// out of the area range are ignored, and so are unmatched detections out of
// it. `gts` are in file order, `dts` already sorted by score and truncated,
// and ious[d * G + g] holds their IoU.
ImageCategoryEvaluation match_detections(std::span<const CocoAnnotation* const> gts,
                                         std::span<const CocoAnnotation* const> dts, std::span<const double> ious,
                                         const EvaluationParams& params);

}  // namespace dtrain::vision
