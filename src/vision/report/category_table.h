#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {

// The six precision statistics of COCO's summary, in its order.
inline constexpr std::array<const char*, 6> kPrecisionStatistics = {"AP", "AP50", "AP75", "APs", "APm", "APl"};

// One category's line of the per-category table: the precision statistics
// of pycocotools' summarize restricted to the category (precision[t, :, k,
// area, maxDets=100] over the statistic's IoU thresholds, the mean of the
// entries > -1 in numpy's order, -1 when there are none), and what they were
// measured on.
struct CategoryRow {
  int64_t id = 0;
  std::string name;
  std::array<double, 6> ap{-1, -1, -1, -1, -1, -1};  // AP, AP50, AP75, APs, APm, APl
  uint64_t ground_truths = 0;                        // not crowd, in the evaluated images (the recall's denominator)
  uint64_t detections = 0;                           // evaluated: at most 100 per image, in the evaluated images
};

struct CategoryTable {
  IouType iou_type = IouType::kBbox;
  std::vector<CategoryRow> rows;  // evaluation order (ascending id)
  // "all categories": the summary's six statistics, and the totals.
  CategoryRow all;
};

// The table of an accumulated evaluation; `summary` is evaluator.summarize().
// Needs pycocotools' parameters: an "all", "small", "medium" and "large" area
// range, at least three detection limits (the statistics read the third, as
// summarize does) and the IoU thresholds .5 and .75. Those are CocoError.
CategoryTable category_table(const CocoEvaluator& evaluator, const CocoSummary& summary);

// The rows ordered by AP, best first (ties by id; no ground truth, -1, last).
std::vector<CategoryRow> rows_by_ap(const CategoryTable& table);

}  // namespace dtrain::vision
