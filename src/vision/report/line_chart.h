#pragma once

#include <string>
#include <vector>

namespace dtrain::vision {

inline constexpr int kGridTitleHeight = 72;  // pixels above the cells of a grid

struct Rgb {
  double r = 0, g = 0, b = 0;  // 0..1
};

// One line of a chart. Points whose y is below the chart's y range (e.g.
// COCO's -1, "undefined") are left out, breaking the line there.
struct ChartSeries {
  std::string label;
  Rgb colour;
  std::vector<double> x, y;
};

// A line chart on fixed axes with tick labels, a title, axis titles and an
// optional legend (right of the plot, so it hides no line).
struct LineChart {
  std::string title;
  std::string x_label, y_label;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  double tick_step = 0.1;  // both axes
  std::vector<ChartSeries> series;
  bool legend = true;
};

// The chart as a width x height PNG (RGB, white background), drawn with
// Cairo. Throws std::runtime_error naming `path` when it cannot be written.
void write_line_chart_png(const LineChart& chart, int width, int height, const std::string& path);

// Small multiples: the charts on a grid of `columns`, each cell
// cell_width x cell_height, under a common title and a row explaining the
// first chart's series (kGridTitleHeight in all); a cell draws its own
// legend only when its chart asks for one.
void write_chart_grid_png(const std::vector<LineChart>& charts, int columns, int cell_width, int cell_height,
                          const std::string& title, const std::string& path);

// A colour on the viridis scale (0: dark purple, 1: yellow), for ordered series.
Rgb viridis(double position);

}  // namespace dtrain::vision
