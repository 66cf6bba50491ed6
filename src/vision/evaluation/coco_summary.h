#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vision/evaluation/accumulated_evaluation.h"
#include "vision/coco/coco_annotation.h"
#include "vision/evaluation/evaluation_params.h"

namespace dtrain::vision {

// One of COCO's twelve summary numbers.
struct SummaryStatistic {
  std::string name;   // AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100, ARs, ARm, ARl
  double value = -1;  // -1 when nothing could be measured
  std::string line;   // as pycocotools prints it
};

// Average precision of one category over IoU .50:.95, all areas, 100
// detections (what detectron2 reports per class); -1 without ground truth.
struct CategoryAp {
  int64_t category_id = 0;
  std::string name;
  double ap = -1;
};

struct CocoSummary {
  IouType iou_type = IouType::kBbox;
  std::vector<SummaryStatistic> stats;
  std::vector<CategoryAp> per_category;

  // The twelve lines of pycocotools' summarize(), newline-terminated.
  std::string text() const;
  std::vector<double> values() const;
};

// COCOeval.summarize for bbox/segm: means over the settings that are not -1,
// computed as numpy computes them. `categories` are in evaluation order
// (ascending id), one per category of `accumulated`.
CocoSummary summarize(const AccumulatedEvaluation& accumulated, const EvaluationParams& params,
                      const std::vector<CocoCategory>& categories);

}  // namespace dtrain::vision
