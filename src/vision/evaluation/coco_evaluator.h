#pragma once

#include <cstdint>
#include <vector>

#include "vision/evaluation/accumulated_evaluation.h"
#include "vision/evaluation/coco_detections.h"
#include "vision/evaluation/coco_ground_truth.h"
#include "vision/evaluation/coco_summary.h"
#include "vision/evaluation/evaluation_params.h"
#include "vision/evaluation/image_evaluation.h"

namespace dtrain::vision {

// COCOeval for boxes and masks with pycocotools' exact results, spread over
// threads. Use: evaluate(), accumulate(), summarize(). Images are the ground
// truth's (ascending id), categories the ground truth's (ascending id);
// detections of other categories are not evaluated. The results do not
// depend on the thread count. gt and dt must outlive the evaluator.
class CocoEvaluator {
 public:
  CocoEvaluator(const CocoGroundTruth& gt, const CocoDetections& dt, IouType iou_type, int threads = 0);
  CocoEvaluator(const CocoGroundTruth& gt, const CocoDetections& dt, EvaluationParams params, int threads = 0);

  // Matches detections to ground truth per image and category (COCOeval.evaluate).
  void evaluate();
  // Precision/recall tables over all images (COCOeval.accumulate).
  void accumulate();
  // The twelve statistics and per-category AP (COCOeval.summarize).
  CocoSummary summarize() const;

  const EvaluationParams& params() const { return params_; }
  const std::vector<int64_t>& image_ids() const { return image_ids_; }
  const std::vector<CocoCategory>& categories() const { return categories_; }
  // Per image and category, category-major: [k * images + i].
  const std::vector<ImageCategoryEvaluation>& image_evaluations() const { return evaluations_; }
  const AccumulatedEvaluation& accumulated() const { return accumulated_; }

 private:
  void index_annotations();
  void evaluate_cell(size_t cell);

  const CocoGroundTruth& gt_;
  const CocoDetections& dt_;
  EvaluationParams params_;
  int threads_;

  std::vector<int64_t> image_ids_;
  std::vector<const CocoImage*> images_;
  std::vector<CocoCategory> categories_;
  // Annotations of each cell (k * images + i) in file order, as offsets into
  // the *_by_cell_ arrays.
  std::vector<uint32_t> gt_offsets_, dt_offsets_;
  std::vector<const CocoAnnotation*> gt_by_cell_, dt_by_cell_;

  std::vector<ImageCategoryEvaluation> evaluations_;
  AccumulatedEvaluation accumulated_;
  bool evaluated_ = false;
  bool accumulated_done_ = false;
};

}  // namespace dtrain::vision
