#pragma once

#include <cstddef>
#include <vector>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {

// pycocotools' accumulate() also keeps `scores`: at each recall threshold,
// the score of the ranked detection whose precision was read there (0 past
// the last detection, -1 without ground truth). dtrain's evaluator does not
// keep them, so this ranks each category's evaluated detections again, the
// way accumulate does, for one detection limit; the precision it reads on
// the way must equal the evaluator's (the tests hold them equal).
struct ThresholdScores {
  size_t T = 0, R = 0, K = 0, A = 0;
  std::vector<double> scores;     // [T][R][K][A]
  std::vector<double> precision;  // [T][R][K][A], as accumulated for this limit

  double score_at(size_t t, size_t r, size_t k, size_t a) const { return scores[((t * R + r) * K + k) * A + a]; }
  double precision_at(size_t t, size_t r, size_t k, size_t a) const {
    return precision[((t * R + r) * K + k) * A + a];
  }
};

// For the detection limit params().max_detections[m] of an evaluated
// `evaluator` (evaluate() done).
ThresholdScores threshold_scores(const CocoEvaluator& evaluator, size_t m);

}  // namespace dtrain::vision
