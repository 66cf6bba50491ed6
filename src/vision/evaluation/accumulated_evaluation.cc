#include "vision/evaluation/accumulated_evaluation.h"

#include <algorithm>
#include <limits>

namespace dtrain::vision {
namespace {

// numpy.spacing(1): keeps precision finite before the first detection.
constexpr double kEpsilon = std::numeric_limits<double>::epsilon();

struct RankedDetection {
  double score;
  uint32_t image;  // index into the category's images
  uint32_t rank;   // position among that image's detections
};

}  // namespace

AccumulatedEvaluation AccumulatedEvaluation::empty(const EvaluationParams& params,
                                                   size_t categories) {
  AccumulatedEvaluation e;
  e.T = params.iou_thresholds.size();
  e.R = params.recall_thresholds.size();
  e.K = categories;
  e.A = params.area_ranges.size();
  e.M = params.max_detections.size();
  e.precision.assign(e.T * e.R * e.K * e.A * e.M, -1.0);
  e.recall.assign(e.T * e.K * e.A * e.M, -1.0);
  return e;
}

void accumulate_category(size_t k, std::span<const ImageCategoryEvaluation> images,
                         const EvaluationParams& params, AccumulatedEvaluation& out) {
  const size_t T = out.T, R = out.R, A = out.A, M = out.M;
  std::vector<RankedDetection> ranked;
  std::vector<uint32_t> counted(A, 0);
  bool any_present = false;
  for (size_t i = 0; i < images.size(); ++i) {
    const ImageCategoryEvaluation& e = images[i];
    if (!e.present) continue;
    any_present = true;
    for (size_t a = 0; a < A; ++a) counted[a] += e.counted_gt[a];
    for (size_t d = 0; d < e.scores.size(); ++d) {
      ranked.push_back({e.scores[d], static_cast<uint32_t>(i), static_cast<uint32_t>(d)});
    }
  }
  if (!any_present) return;
  // pycocotools: np.argsort(-scores, kind='mergesort'). Restricting to the
  // first maxDet detections of each image keeps this relative order, so one
  // sort serves every detection limit.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedDetection& x, const RankedDetection& y) { return x.score > y.score; });

  // Outcomes of the ranked detections, gathered once per area range so the
  // passes below read memory in order: by_rank[t * N + n].
  const size_t N = ranked.size();
  std::vector<DetectionOutcome> by_rank(T * N), sequence;
  std::vector<double> recall_curve, precision_curve, recall_of;
  sequence.reserve(N);
  for (size_t a = 0; a < A; ++a) {
    const uint32_t npig = counted[a];
    if (npig == 0) continue;
    recall_of.resize(static_cast<size_t>(npig) + N + 1);
    for (size_t tp = 0; tp < recall_of.size(); ++tp) recall_of[tp] = static_cast<double>(tp) / npig;
    for (size_t n = 0; n < N; ++n) {
      const RankedDetection& r = ranked[n];
      const ImageCategoryEvaluation& e = images[r.image];
      for (size_t t = 0; t < T; ++t) by_rank[t * N + n] = e.outcome(a, t, r.rank, T);
    }
    for (size_t m = 0; m < M; ++m) {
      const auto max_det = static_cast<uint32_t>(params.max_detections[m]);
      for (size_t t = 0; t < T; ++t) {
        sequence.clear();
        const DetectionOutcome* row = &by_rank[t * N];
        for (size_t n = 0; n < N; ++n) {
          if (ranked[n].rank < max_det) sequence.push_back(row[n]);
        }
        const size_t nd = sequence.size();
        recall_curve.resize(nd);
        precision_curve.resize(nd);
        // The same divisions as numpy's tp / npig and tp / (fp + tp + eps);
        // recall comes from the table, and an ignored detection repeats the
        // previous values.
        uint32_t tp = 0, fp = 0;
        double precision = 0;
        for (size_t i = 0; i < nd; ++i) {
          if (sequence[i] != DetectionOutcome::kIgnored || i == 0) {
            if (sequence[i] == DetectionOutcome::kTruePositive) ++tp;
            if (sequence[i] == DetectionOutcome::kFalsePositive) ++fp;
            const double tps = tp;
            precision = tps / (static_cast<double>(fp) + tps + kEpsilon);
          }
          recall_curve[i] = recall_of[tp];
          precision_curve[i] = precision;
        }
        out.recall_at(t, k, a, m) = nd ? recall_curve[nd - 1] : 0;
        for (size_t i = nd; i-- > 1;) {
          if (precision_curve[i] > precision_curve[i - 1]) precision_curve[i - 1] = precision_curve[i];
        }
        // np.searchsorted(rc, recThrs, side='left'); past the end stays 0.
        for (size_t r = 0; r < R; ++r) {
          const auto it = std::lower_bound(recall_curve.begin(), recall_curve.end(),
                                           params.recall_thresholds[r]);
          const auto index = static_cast<size_t>(it - recall_curve.begin());
          double q = 0;
          if (index < nd) q = precision_curve[index];
          out.precision_at(t, r, k, a, m) = q;
        }
      }
    }
  }
}

}  // namespace dtrain::vision
