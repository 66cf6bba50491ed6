#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "vision/evaluation/evaluation_params.h"
#include "vision/evaluation/image_evaluation.h"

namespace dtrain::vision {

// COCOeval.accumulate's output: interpolated precision at each recall
// threshold, the score of the detection where it was read (pycocotools'
// `scores`) and the final recall, for every IoU threshold (T), recall
// threshold (R), category (K), area range (A) and detection limit (M).
// -1 where a setting has no ground truth to find.
struct AccumulatedEvaluation {
  size_t T = 0, R = 0, K = 0, A = 0, M = 0;
  std::vector<double> precision;  // [T][R][K][A][M]
  std::vector<double> scores;     // [T][R][K][A][M]; 0 past the last detection
  std::vector<double> recall;     // [T][K][A][M]

  double& precision_at(size_t t, size_t r, size_t k, size_t a, size_t m) {
    return precision[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double precision_at(size_t t, size_t r, size_t k, size_t a, size_t m) const {
    return precision[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double& score_at(size_t t, size_t r, size_t k, size_t a, size_t m) {
    return scores[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double score_at(size_t t, size_t r, size_t k, size_t a, size_t m) const {
    return scores[(((t * R + r) * K + k) * A + a) * M + m];
  }
  double& recall_at(size_t t, size_t k, size_t a, size_t m) { return recall[((t * K + k) * A + a) * M + m]; }
  double recall_at(size_t t, size_t k, size_t a, size_t m) const { return recall[((t * K + k) * A + a) * M + m]; }

  static AccumulatedEvaluation empty(const EvaluationParams& params, size_t categories);
};

// Fills category k of `out` from that category's per-image evaluations (one
// per image, in image-id order): detections of all images ranked by score
// (stable, so ties keep image order), cumulative true and false positives,
// precision made non-increasing from the end and read at each recall
// threshold (the first rank reaching it; 0 beyond the last).
void accumulate_category(size_t k, std::span<const ImageCategoryEvaluation> images, const EvaluationParams& params,
                         AccumulatedEvaluation& out);

}  // namespace dtrain::vision
