#pragma once

#include <cstddef>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {

// The precision/recall curves of an accumulated evaluation at one detection
// limit (the summary's, maxDets=100), in the shapes a plot wants.
// T IoU thresholds, R recall thresholds, A area ranges, K categories.
struct PrecisionRecallCurves {
  IouType iou_type = IouType::kBbox;
  int max_detections = 0;
  std::vector<double> iou_thresholds;     // T
  std::vector<double> recall_thresholds;  // R (101 with COCO's defaults)
  std::vector<AreaRange> areas;           // A
  std::vector<CocoCategory> categories;   // K, evaluation order
  // Mean over the categories that have ground truth in the area range, at
  // each recall threshold: [(t * A + a) * R + r]; -1 where none has.
  std::vector<double> precision;
  // AP at one IoU threshold and area: the mean of precision[t, :, :, a] over
  // entries > -1 (summarize's AP50 and AP75 for t = .5, .75 and area all); -1 when none.
  std::vector<double> ap;  // [t * A + a]
  // Area "all", per category: precision and pycocotools' scores (the score
  // of the detection whose precision is read there; 0 past the last
  // detection), [(k * T + t) * R + r]; -1 without ground truth.
  std::vector<double> category_precision, category_scores;
  // Final recall: [(t * K + k) * A + a]; -1 without ground truth.
  std::vector<double> recall;

  size_t T() const { return iou_thresholds.size(); }
  size_t R() const { return recall_thresholds.size(); }
  size_t A() const { return areas.size(); }
  size_t K() const { return categories.size(); }
  size_t area_index(const std::string& label) const;  // CocoError when absent
};

// From an accumulated `evaluator`, for the detection limit max_detections[2]
// (summarize's); the area range "all" is required.
PrecisionRecallCurves precision_recall_curves(const CocoEvaluator& evaluator);

// The curves as `<type>_pr.json` holds them (layout: docs/maskrcnn.md, "Evaluation
// report"). Curve values are rounded to six decimals; -1 marks "undefined".
//   {"iou_type", "max_detections",
//    "iou_thresholds": [T], "recall_thresholds": [R],
//    "areas": [{"label", "min", "max"}] (A),
//    "categories": [{"id", "name"}] (K),
//    "precision": [T][A][R]  mean over categories with ground truth,
//    "ap": [T][A],
//    "category_precision": [K][T][R]  area "all",
//    "category_scores": [K][T][R]  area "all",
//    "recall": [T][K][A]}
nlohmann::ordered_json to_json(const PrecisionRecallCurves& curves);

}  // namespace dtrain::vision
