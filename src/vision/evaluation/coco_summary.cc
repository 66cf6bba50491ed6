#include "vision/evaluation/coco_summary.h"

#include <fmt/format.h>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/numpy_arithmetic.h"

namespace dtrain::vision {
namespace {

struct StatisticSpec {
  const char* name;
  bool precision;        // AP (true) or AR
  double iou_threshold;  // < 0: averaged over all thresholds
  const char* area;
  size_t max_det_index;
};

constexpr StatisticSpec kStatistics[] = {
    {"AP", true, -1, "all", 2},     {"AP50", true, .5, "all", 2},    {"AP75", true, .75, "all", 2},
    {"APs", true, -1, "small", 2},  {"APm", true, -1, "medium", 2},  {"APl", true, -1, "large", 2},
    {"AR1", false, -1, "all", 0},   {"AR10", false, -1, "all", 1},   {"AR100", false, -1, "all", 2},
    {"ARs", false, -1, "small", 2}, {"ARm", false, -1, "medium", 2}, {"ARl", false, -1, "large", 2},
};

// Mean over entries > -1 in numpy's element order (t, then r, then k); -1
// when there are none.
double mean_of_measured(const std::vector<double>& values) { return values.empty() ? -1.0 : numpy_mean(values); }

size_t area_index(const EvaluationParams& params, const std::string& label) {
  for (size_t a = 0; a < params.area_ranges.size(); ++a) {
    if (params.area_ranges[a].label == label) return a;
  }
  throw CocoError("summary needs the area range '" + label + "'");
}

}  // namespace

std::string CocoSummary::text() const {
  std::string out;
  for (const auto& s : stats) out += s.line + "\n";
  return out;
}

std::vector<double> CocoSummary::values() const {
  std::vector<double> out;
  for (const auto& s : stats) out.push_back(s.value);
  return out;
}

CocoSummary summarize(const AccumulatedEvaluation& e, const EvaluationParams& params,
                      const std::vector<CocoCategory>& categories) {
  if (params.max_detections.size() < 3) throw CocoError("summary needs three detection limits");
  CocoSummary summary;
  summary.iou_type = params.iou_type;
  std::vector<double> measured;
  for (const StatisticSpec& spec : kStatistics) {
    const size_t a = area_index(params, spec.area);
    const size_t m = spec.max_det_index;
    // Thresholds are matched by exact equality, as np.where(iouThr == iouThrs).
    std::vector<size_t> thresholds;
    for (size_t t = 0; t < e.T; ++t) {
      if (spec.iou_threshold < 0 || params.iou_thresholds[t] == spec.iou_threshold) thresholds.push_back(t);
    }
    measured.clear();
    for (size_t t : thresholds) {
      if (spec.precision) {
        for (size_t r = 0; r < e.R; ++r) {
          for (size_t k = 0; k < e.K; ++k) {
            const double v = e.precision_at(t, r, k, a, m);
            if (v > -1) measured.push_back(v);
          }
        }
      } else {
        for (size_t k = 0; k < e.K; ++k) {
          const double v = e.recall_at(t, k, a, m);
          if (v > -1) measured.push_back(v);
        }
      }
    }
    const double value = mean_of_measured(measured);
    const std::string iou = spec.iou_threshold < 0 ? fmt::format("{:0.2f}:{:0.2f}", params.iou_thresholds.front(),
                                                                 params.iou_thresholds.back())
                                                   : fmt::format("{:0.2f}", spec.iou_threshold);
    const std::string line =
        fmt::format(" {:<18} {} @[ IoU={:<9} | area={:>6} | maxDets={:>3} ] = {:0.3f}",
                    spec.precision ? "Average Precision" : "Average Recall", spec.precision ? "(AP)" : "(AR)", iou,
                    spec.area, params.max_detections[m], value);
    summary.stats.push_back({spec.name, value, line});
  }

  const size_t all = area_index(params, "all");
  const size_t last = params.max_detections.size() - 1;
  for (size_t k = 0; k < e.K; ++k) {
    measured.clear();
    for (size_t t = 0; t < e.T; ++t) {
      for (size_t r = 0; r < e.R; ++r) {
        const double v = e.precision_at(t, r, k, all, last);
        if (v > -1) measured.push_back(v);
      }
    }
    CategoryAp ap;
    if (k < categories.size()) {
      ap.category_id = categories[k].id;
      ap.name = categories[k].name;
    }
    ap.ap = mean_of_measured(measured);
    summary.per_category.push_back(ap);
  }
  return summary;
}

}  // namespace dtrain::vision
