#include "vision/report/category_table.h"

#include <algorithm>
#include <string_view>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/numpy_arithmetic.h"

namespace dtrain::vision {
namespace {

struct StatisticSpec {
  double iou_threshold;  // < 0: every threshold
  std::string_view area;
};

// AP, AP50, AP75, APs, APm, APl as pycocotools' _summarizeDets asks for them.
constexpr StatisticSpec kSpecs[] = {{-1, "all"},   {.5, "all"},    {.75, "all"},
                                    {-1, "small"}, {-1, "medium"}, {-1, "large"}};

size_t area_index(const EvaluationParams& params, std::string_view label) {
  for (size_t a = 0; a < params.area_ranges.size(); ++a) {
    if (params.area_ranges[a].label == label) return a;
  }
  throw CocoError("the per-category table needs the area range '" + std::string(label) + "'");
}

// Category k's share of one statistic: entries > -1 of precision[t, :, k, a,
// m] over the selected thresholds, in numpy's order (t, then r).
double category_statistic(const AccumulatedEvaluation& e, const EvaluationParams& params, const StatisticSpec& spec,
                          size_t k, size_t m, std::vector<double>& measured) {
  const size_t a = area_index(params, spec.area);
  measured.clear();
  bool threshold_found = false;
  for (size_t t = 0; t < e.T; ++t) {
    // Matched by exact equality, as np.where(iouThr == p.iouThrs).
    if (spec.iou_threshold >= 0 && params.iou_thresholds[t] != spec.iou_threshold) continue;
    threshold_found = true;
    for (size_t r = 0; r < e.R; ++r) {
      const double v = e.precision_at(t, r, k, a, m);
      if (v > -1) measured.push_back(v);
    }
  }
  if (!threshold_found)
    throw CocoError("the per-category table needs the IoU threshold " + std::to_string(spec.iou_threshold));
  return measured.empty() ? -1.0 : numpy_mean(measured);
}

}  // namespace

CategoryTable category_table(const CocoEvaluator& evaluator, const CocoSummary& summary) {
  const EvaluationParams& params = evaluator.params();
  const AccumulatedEvaluation& e = evaluator.accumulated();
  if (params.max_detections.size() < 3) throw CocoError("the per-category table needs three detection limits");
  if (summary.stats.size() < kPrecisionStatistics.size()) {
    throw CocoError("the per-category table needs the summary's statistics");
  }
  const size_t m = 2;  // summarize: maxDets=self.params.maxDets[2]
  const size_t all_areas = area_index(params, "all");
  const size_t images = evaluator.image_ids().size();
  const auto& evaluations = evaluator.image_evaluations();

  CategoryTable table;
  table.iou_type = params.iou_type;
  table.all.name = "all categories";
  std::vector<double> measured;
  for (size_t k = 0; k < e.K; ++k) {
    CategoryRow row;
    row.id = evaluator.categories()[k].id;
    row.name = evaluator.categories()[k].name;
    for (size_t s = 0; s < row.ap.size(); ++s) row.ap[s] = category_statistic(e, params, kSpecs[s], k, m, measured);
    for (size_t i = 0; i < images; ++i) {
      const ImageCategoryEvaluation& cell = evaluations[k * images + i];
      if (!cell.present) continue;
      row.ground_truths += cell.counted_gt[all_areas];
      row.detections += cell.scores.size();
    }
    table.all.ground_truths += row.ground_truths;
    table.all.detections += row.detections;
    table.rows.push_back(std::move(row));
  }
  for (size_t s = 0; s < table.all.ap.size(); ++s) table.all.ap[s] = summary.stats[s].value;
  return table;
}

std::vector<CategoryRow> rows_by_ap(const CategoryTable& table) {
  std::vector<CategoryRow> rows = table.rows;
  std::stable_sort(rows.begin(), rows.end(),
                   [](const CategoryRow& x, const CategoryRow& y) { return x.ap[0] > y.ap[0]; });
  return rows;
}

}  // namespace dtrain::vision
