#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {

// What went wrong at IoU .50 (area "all", the evaluated detections: at most
// max_detections.back() per image and category), in the spirit of TIDE
// (Bolya et al., 2020). Every false positive of the evaluator gets one cause,
// tested in TIDE's order against the image's ground truths that are not
// crowds (box or mask IoU as the evaluation's type, without the crowd rule):
//  1. localisation: its best IoU with a ground truth of its class is in [.1, .5);
//  2. classification: IoU >= .5 with a ground truth of another class;
//  3. duplicate: IoU >= .5 with a ground truth of its class (one that a
//     higher-scored detection had already taken, or it would have matched);
//  4. background: IoU < .1 with every ground truth;
//  5. localisation_and_classification: none of these (its best overlap is
//     with another class, in [.1, .5)).
// `detections` are the evaluated ones that are not ignored (one that lands
// on a crowd is neither a hit nor an error). Missed ground truths are the
// counted ones (not crowd) that no detection matched at .5: the false
// negatives, whatever else happened near them.
struct ErrorCounts {
  uint64_t detections = 0, true_positives = 0, false_positives = 0;
  uint64_t localisation = 0, classification = 0, duplicate = 0, background = 0, localisation_and_classification = 0;
  uint64_t ground_truths = 0, missed = 0;
};

struct CategoryErrors {
  int64_t id = 0;
  std::string name;
  ErrorCounts counts;
};

struct ErrorBreakdown {
  IouType iou_type = IouType::kBbox;
  double iou_threshold = 0.5;
  int max_detections = 0;
  ErrorCounts total;
  std::vector<CategoryErrors> categories;  // evaluation order
};

// Needs the evaluated `evaluator` (evaluate() done) and the gt and dt it was
// built on; masks are decoded again for segm. CocoError without the IoU
// threshold .5 or the area range "all".
ErrorBreakdown error_breakdown(const CocoEvaluator& evaluator, const CocoGroundTruth& gt, const CocoDetections& dt);

// {"iou_type", "iou_threshold", "area": "all", "max_detections", "total": counts,
//  "categories": [{"id", "name", counts...}]}, counts as the ErrorCounts fields.
nlohmann::ordered_json to_json(const ErrorBreakdown& errors);

// One Markdown paragraph for the per-category report.
std::string error_breakdown_markdown(const ErrorBreakdown& errors);

}  // namespace dtrain::vision
