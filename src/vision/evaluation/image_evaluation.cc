#include "vision/evaluation/image_evaluation.h"

#include <algorithm>
#include <numeric>

namespace dtrain::vision {

ImageCategoryEvaluation match_detections(std::span<const CocoAnnotation* const> gts,
                                         std::span<const CocoAnnotation* const> dts, std::span<const double> ious,
                                         const EvaluationParams& params) {
  ImageCategoryEvaluation out;
  if (gts.empty() && dts.empty()) return out;
  out.present = true;

  const size_t T = params.iou_thresholds.size();
  const size_t A = params.area_ranges.size();
  const size_t G = gts.size();
  const size_t D = dts.size();
  const bool have_ious = G > 0 && D > 0;

  out.scores.resize(D);
  for (size_t d = 0; d < D; ++d) out.scores[d] = dts[d]->score;
  out.outcomes.assign(A * T * D, DetectionOutcome::kFalsePositive);
  out.counted_gt.assign(A, 0);

  std::vector<size_t> order(G);
  std::vector<uint8_t> ignored(G);         // by file position
  std::vector<uint8_t> sorted_ignored(G);  // by matching order
  std::vector<uint8_t> sorted_crowd(G);
  std::vector<int64_t> sorted_id(G);
  std::vector<uint8_t> gt_taken(G);  // per threshold, by matching order
  std::vector<double> sorted_ious(D * G);

  for (size_t a = 0; a < A; ++a) {
    const AreaRange& range = params.area_ranges[a];
    uint32_t counted = 0;
    for (size_t g = 0; g < G; ++g) {
      const double area = gts[g]->area;
      ignored[g] = gts[g]->iscrowd || area < range.min || area > range.max;
      counted += !ignored[g];
    }
    out.counted_gt[a] = counted;

    // Regular ground truths first, ignored ones after, file order within.
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ignored[x] < ignored[y]; });
    for (size_t g = 0; g < G; ++g) {
      sorted_ignored[g] = ignored[order[g]];
      sorted_crowd[g] = gts[order[g]]->iscrowd;
      sorted_id[g] = gts[order[g]]->id;
    }
    if (have_ious) {
      for (size_t d = 0; d < D; ++d) {
        for (size_t g = 0; g < G; ++g) sorted_ious[d * G + g] = ious[d * G + order[g]];
      }
    }

    for (size_t t = 0; t < T; ++t) {
      DetectionOutcome* outcome = &out.outcomes[(a * T + t) * D];
      std::fill(gt_taken.begin(), gt_taken.end(), 0);
      for (size_t d = 0; d < D; ++d) {
        bool matched = false;  // pycocotools' dtm != 0: matched a ground truth with id != 0
        bool ignore = false;
        if (have_ious) {
          double best = std::min(params.iou_thresholds[t], 1 - 1e-10);
          ptrdiff_t m = -1;
          const double* row = &sorted_ious[d * G];
          for (size_t g = 0; g < G; ++g) {
            if (gt_taken[g] && !sorted_crowd[g]) continue;
            // Matched a regular ground truth; the rest are ignored ones.
            if (m > -1 && !sorted_ignored[m] && sorted_ignored[g]) break;
            if (row[g] < best) continue;
            best = row[g];
            m = static_cast<ptrdiff_t>(g);
          }
          if (m != -1) {
            ignore = sorted_ignored[m];
            matched = sorted_id[m] != 0;
            gt_taken[m] = 1;  // detection ids start at 1
          }
        }
        if (!matched) {
          const double area = dts[d]->area;
          if (area < range.min || area > range.max) ignore = true;
        }
        outcome[d] = ignore    ? DetectionOutcome::kIgnored
                     : matched ? DetectionOutcome::kTruePositive
                               : DetectionOutcome::kFalsePositive;
      }
    }
  }
  return out;
}

}  // namespace dtrain::vision
