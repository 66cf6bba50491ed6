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

AccumulatedEvaluation AccumulatedEvaluation::empty(const EvaluationParams& params, size_t categories) {
  AccumulatedEvaluation e;
  e.T = params.iou_thresholds.size();
  e.R = params.recall_thresholds.size();
  e.K = categories;
  e.A = params.area_ranges.size();
  e.M = params.max_detections.size();
  e.precision.assign(e.T * e.R * e.K * e.A * e.M, -1.0);
  e.scores.assign(e.precision.size(), -1.0);
  e.recall.assign(e.T * e.K * e.A * e.M, -1.0);
  return e;
}

void accumulate_category(size_t k, std::span<const ImageCategoryEvaluation> images, const EvaluationParams& params,
                         AccumulatedEvaluation& out) {
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
  std::vector<DetectionOutcome> by_rank(T * N);
  std::vector<double> recall_of, envelope, scores_of_hits;
  std::vector<size_t> needed(R);  // per recall threshold: true positives to reach it
  for (size_t a = 0; a < A; ++a) {
    const uint32_t npig = counted[a];
    if (npig == 0) continue;
    // numpy's tp / npig for every count of true positives.
    recall_of.resize(static_cast<size_t>(npig) + N + 1);
    for (size_t tp = 0; tp < recall_of.size(); ++tp) recall_of[tp] = static_cast<double>(tp) / npig;
    // The recall curve is recall_of[true positives so far], which only grows:
    // np.searchsorted(rc, thr, side='left') is the first rank where the count
    // of true positives reaches needed[r].
    for (size_t r = 0; r < R; ++r) {
      needed[r] = static_cast<size_t>(
          std::lower_bound(recall_of.begin(), recall_of.end(), params.recall_thresholds[r]) - recall_of.begin());
    }
    for (size_t n = 0; n < N; ++n) {
      const RankedDetection& r = ranked[n];
      const ImageCategoryEvaluation& e = images[r.image];
      for (size_t t = 0; t < T; ++t) by_rank[t * N + n] = e.outcome(a, t, r.rank, T);
    }
    for (size_t m = 0; m < M; ++m) {
      const auto max_det = static_cast<uint32_t>(params.max_detections[m]);
      for (size_t t = 0; t < T; ++t) {
        // Precision tp / (fp + tp + eps) at rank i (numpy's divisions) only
        // grows at a true positive; between two it falls or stays (more
        // false positives, or ignored detections that change nothing). So
        // the precision made non-increasing from the end, read at a rank
        // where the k-th true positive is, is the largest precision at the
        // k-th or a later true positive: only those are computed.
        // The score read at a threshold is that of the rank where precision is read: the
        // first counted detection for recall 0, else the true positive that reaches it.
        const DetectionOutcome* row = &by_rank[t * N];
        uint32_t tp = 0, fp = 0;
        size_t nd = 0;
        double first_score = 0;
        envelope.clear();
        scores_of_hits.clear();
        for (size_t n = 0; n < N; ++n) {
          if (ranked[n].rank >= max_det) continue;
          if (nd++ == 0) first_score = ranked[n].score;
          if (row[n] == DetectionOutcome::kTruePositive) {
            ++tp;
            const double tps = tp;
            envelope.push_back(tps / (static_cast<double>(fp) + tps + kEpsilon));
            scores_of_hits.push_back(ranked[n].score);
          } else if (row[n] == DetectionOutcome::kFalsePositive) {
            ++fp;
          }
        }
        for (size_t i = envelope.size(); i-- > 1;) {
          if (envelope[i] > envelope[i - 1]) envelope[i - 1] = envelope[i];
        }
        out.recall_at(t, k, a, m) = nd ? recall_of[tp] : 0;
        for (size_t r = 0; r < R; ++r) {
          // Before the first true positive the precision is 0; past the last
          // rank (recall never reached) q stays 0.
          double q = 0, score = 0;
          if (nd > 0) {
            if (needed[r] == 0) {
              if (!envelope.empty()) q = envelope[0];
              score = first_score;
            } else if (needed[r] <= envelope.size()) {
              q = envelope[needed[r] - 1];
              score = scores_of_hits[needed[r] - 1];
            }
          }
          out.precision_at(t, r, k, a, m) = q;
          out.score_at(t, r, k, a, m) = score;
        }
      }
    }
  }
}

}  // namespace dtrain::vision
