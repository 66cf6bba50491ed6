#include "vision/report/precision_recall_plots.h"

#include <fmt/format.h>

#include "vision/report/line_chart.h"

namespace dtrain::vision {
namespace {

constexpr size_t kAllCategoriesUpTo = 16, kBestAndWorst = 8;

// The IoU thresholds from dark (.50) to light (.95); viridis' last, pale
// yellow stretch is left out so every line shows on white.
Rgb threshold_colour(size_t t, size_t thresholds) {
  return viridis(thresholds > 1 ? 0.88 * static_cast<double>(t) / static_cast<double>(thresholds - 1) : 0);
}

std::string ap_text(double ap) { return ap > -1 ? fmt::format("{:0.3f}", ap) : "n/a"; }

// The summary's statistic for an area range (AP, APs, APm, APl), or -1.
double summary_ap(const CocoSummary& summary, const std::string& area) {
  const std::string name = area == "all"      ? "AP"
                           : area == "small"  ? "APs"
                           : area == "medium" ? "APm"
                           : area == "large"  ? "APl"
                                              : "";
  for (const SummaryStatistic& s : summary.stats) {
    if (s.name == name) return s.value;
  }
  return -1;
}

LineChart precision_recall_chart(std::string title) {
  LineChart chart;
  chart.title = std::move(title);
  chart.x_label = "recall";
  chart.y_label = "precision";
  return chart;
}

}  // namespace

std::vector<std::string> write_precision_recall_plots(const PrecisionRecallCurves& c, const CocoSummary& summary,
                                                      const std::string& dir, const std::string& prefix) {
  std::vector<std::string> written;
  const size_t T = c.T(), R = c.R(), A = c.A();
  const std::string type(iou_type_name(c.iou_type));
  for (size_t a = 0; a < A; ++a) {
    const std::string& area = c.areas[a].label;
    LineChart chart = precision_recall_chart(fmt::format("{} precision/recall, area {}: AP {} (maxDets {})", type, area,
                                                         ap_text(summary_ap(summary, area)), c.max_detections));
    for (size_t t = 0; t < T; ++t) {
      ChartSeries s;
      s.label = fmt::format("IoU {:0.2f}: AP {}", c.iou_thresholds[t], ap_text(c.ap[t * A + a]));
      s.colour = threshold_colour(t, T);
      s.x = c.recall_thresholds;
      s.y.assign(c.precision.begin() + static_cast<ptrdiff_t>((t * A + a) * R),
                 c.precision.begin() + static_cast<ptrdiff_t>((t * A + a + 1) * R));
      chart.series.push_back(std::move(s));
    }
    const std::string path = fmt::format("{}/{}_pr_{}.png", dir, prefix, area);
    write_line_chart_png(chart, kPlotWidth, kPlotHeight, path);
    written.push_back(path);
  }
  return written;
}

std::string write_category_precision_recall_plot(const PrecisionRecallCurves& c, const CategoryTable& table,
                                                 const std::string& dir, const std::string& prefix) {
  std::vector<CategoryRow> shown;
  for (const CategoryRow& row : rows_by_ap(table)) {
    if (row.ap[0] > -1) shown.push_back(row);
  }
  if (shown.empty()) return "";
  std::string which = "every category with ground truth";
  if (shown.size() > kAllCategoriesUpTo) {
    shown.erase(shown.begin() + kBestAndWorst, shown.end() - kBestAndWorst);
    which = fmt::format("the {} best and the {} worst categories", kBestAndWorst, kBestAndWorst);
  }
  const size_t T = c.T(), R = c.R();
  std::vector<LineChart> charts;
  for (const CategoryRow& row : shown) {
    size_t k = 0;
    while (k < c.K() && c.categories[k].id != row.id) ++k;
    LineChart chart = precision_recall_chart(fmt::format("{} ({}): AP {}", row.name, row.id, ap_text(row.ap[0])));
    chart.legend = false;  // the grid explains the colours once, under its title
    for (size_t t = 0; t < T; ++t) {
      ChartSeries s;
      s.label = fmt::format("IoU {:0.2f}", c.iou_thresholds[t]);
      s.colour = threshold_colour(t, T);
      s.x = c.recall_thresholds;
      s.y.assign(c.category_precision.begin() + static_cast<ptrdiff_t>((k * T + t) * R),
                 c.category_precision.begin() + static_cast<ptrdiff_t>((k * T + t + 1) * R));
      chart.series.push_back(std::move(s));
    }
    charts.push_back(std::move(chart));
  }
  const std::string path = fmt::format("{}/{}_pr_per_category.png", dir, prefix);
  write_chart_grid_png(charts, kGridColumns, kGridCellWidth, kGridCellHeight,
                       fmt::format("{} precision/recall per category, area all, maxDets {}: {}",
                                   iou_type_name(c.iou_type), c.max_detections, which),
                       path);
  return path;
}

}  // namespace dtrain::vision
