#include "vision/report/threshold_scores.h"

#include <algorithm>
#include <limits>

#include "vision/coco/coco_error.h"

namespace dtrain::vision {
namespace {

// numpy.spacing(1), as in accumulate.
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

struct Ranked {
  double score;
  const ImageCategoryEvaluation* image;
  size_t rank;  // position among that image's detections
};

}  // namespace

ThresholdScores threshold_scores(const CocoEvaluator& evaluator, size_t m) {
  const EvaluationParams& params = evaluator.params();
  if (m >= params.max_detections.size()) throw CocoError("no such detection limit");
  const auto& evaluations = evaluator.image_evaluations();
  const size_t images = evaluator.image_ids().size();
  ThresholdScores out;
  out.T = params.iou_thresholds.size();
  out.R = params.recall_thresholds.size();
  out.K = evaluator.categories().size();
  out.A = params.area_ranges.size();
  if (evaluations.size() != out.K * images) throw CocoError("threshold scores need evaluate() first");
  out.scores.assign(out.T * out.R * out.K * out.A, -1.0);
  out.precision.assign(out.scores.size(), -1.0);
  const auto max_det = static_cast<size_t>(params.max_detections[m]);

  std::vector<Ranked> ranked;
  std::vector<double> recall_curve, precision_curve;
  for (size_t k = 0; k < out.K; ++k) {
    // The first max_det detections of each image, ranked by score with ties
    // in image order (np.argsort(-dtScores, kind='mergesort')).
    ranked.clear();
    std::vector<uint64_t> counted(out.A, 0);
    bool any_present = false;
    for (size_t i = 0; i < images; ++i) {
      const ImageCategoryEvaluation& e = evaluations[k * images + i];
      if (!e.present) continue;
      any_present = true;
      for (size_t a = 0; a < out.A; ++a) counted[a] += e.counted_gt[a];
      for (size_t d = 0; d < e.scores.size() && d < max_det; ++d) ranked.push_back({e.scores[d], &e, d});
    }
    if (!any_present) continue;
    std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& x, const Ranked& y) { return x.score > y.score; });
    const size_t nd = ranked.size();
    recall_curve.resize(nd);
    precision_curve.resize(nd);
    for (size_t a = 0; a < out.A; ++a) {
      const uint64_t npig = counted[a];
      if (npig == 0) continue;
      for (size_t t = 0; t < out.T; ++t) {
        uint64_t tp = 0, fp = 0;
        double precision = 0;
        for (size_t n = 0; n < nd; ++n) {
          const DetectionOutcome o = ranked[n].image->outcome(a, t, ranked[n].rank, out.T);
          // An ignored detection repeats the previous values (tp and fp do not move).
          if (o != DetectionOutcome::kIgnored || n == 0) {
            if (o == DetectionOutcome::kTruePositive) ++tp;
            if (o == DetectionOutcome::kFalsePositive) ++fp;
            const auto tps = static_cast<double>(tp);
            precision = tps / (static_cast<double>(fp) + tps + kEpsilon);
          }
          recall_curve[n] = static_cast<double>(tp) / static_cast<double>(npig);
          precision_curve[n] = precision;
        }
        for (size_t n = nd; n-- > 1;) {
          if (precision_curve[n] > precision_curve[n - 1]) precision_curve[n - 1] = precision_curve[n];
        }
        for (size_t r = 0; r < out.R; ++r) {
          // np.searchsorted(rc, recThrs, side='left'); past the end both stay 0.
          const auto it = std::lower_bound(recall_curve.begin(), recall_curve.end(), params.recall_thresholds[r]);
          const auto index = static_cast<size_t>(it - recall_curve.begin());
          const size_t at = ((t * out.R + r) * out.K + k) * out.A + a;
          out.precision[at] = index < nd ? precision_curve[index] : 0;
          out.scores[at] = index < nd ? ranked[index].score : 0;
        }
      }
    }
  }
  return out;
}

}  // namespace dtrain::vision
