#pragma once

#include <string>
#include <vector>

#include "vision/evaluation/coco_summary.h"
#include "vision/report/category_table.h"
#include "vision/report/precision_recall_curves.h"

namespace dtrain::vision {

inline constexpr int kPlotWidth = 800, kPlotHeight = 600;
inline constexpr int kGridColumns = 4, kGridCellWidth = 360, kGridCellHeight = 300;

// `<prefix>_pr_<area>.png` (kPlotWidth x kPlotHeight) for every area range:
// precision against recall, one line per IoU threshold (legend with each
// threshold's AP), titled with the IoU type, the area and its AP from
// `summary`. Returns the paths written.
std::vector<std::string> write_precision_recall_plots(const PrecisionRecallCurves& curves, const CocoSummary& summary,
                                                      const std::string& dir, const std::string& prefix);

// `<prefix>_pr_per_category.png`: small multiples (kGridColumns wide, cells
// kGridCellWidth x kGridCellHeight) of the categories with ground truth,
// area "all": all of them sorted by AP when there are at most 16, otherwise
// the 8 best and the 8 worst. Returns the path, or "" when no category has
// ground truth.
std::string write_category_precision_recall_plot(const PrecisionRecallCurves& curves, const CategoryTable& table,
                                                 const std::string& dir, const std::string& prefix);

}  // namespace dtrain::vision
