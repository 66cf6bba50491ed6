#include "vision/report/line_chart.h"

#include <cairo.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

namespace dtrain::vision {
namespace {

constexpr const char* kFont = "DejaVu Sans";

struct SurfaceDeleter {
  void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextDeleter {
  void operator()(cairo_t* c) const { cairo_destroy(c); }
};
using Surface = std::unique_ptr<cairo_surface_t, SurfaceDeleter>;
using Context = std::unique_ptr<cairo_t, ContextDeleter>;

struct Box {
  double x, y, width, height;
};

void set_colour(cairo_t* cr, const Rgb& c, double alpha = 1) { cairo_set_source_rgba(cr, c.r, c.g, c.b, alpha); }

void set_font(cairo_t* cr, double size, bool bold = false) {
  cairo_select_font_face(cr, kFont, CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

double text_width(cairo_t* cr, const std::string& text) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, text.c_str(), &e);
  return e.x_advance;
}

// Text anchored at (x, baseline y): align 0 left, 0.5 centre, 1 right.
void show_text(cairo_t* cr, const std::string& text, double x, double y, double align) {
  cairo_move_to(cr, x - align * text_width(cr, text), y);
  cairo_show_text(cr, text.c_str());
}

// Shortens `text` with an ellipsis until it fits `width`.
std::string fitted(cairo_t* cr, std::string text, double width) {
  if (text_width(cr, text) <= width) return text;
  while (!text.empty() && text_width(cr, text + "...") > width) text.pop_back();
  return text + "...";
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  return fmt::format("{:.{}f}", v, decimals);
}

void draw_chart(cairo_t* cr, const LineChart& chart, const Box& cell) {
  // Sizes scale with the cell, text less than the cell so small multiples stay legible.
  const double unit = std::clamp(std::sqrt(std::min(cell.width, cell.height) / 600.0), 0.6, 1.5);
  const double font = 15 * unit, title_font = 18 * unit;
  // The legend sits right of the plot, where it hides no line.
  const bool legend = chart.legend && !chart.series.empty();
  set_font(cr, font * 0.9);
  const double line_height = font * 1.25, swatch = 22 * unit, pad = 8 * unit;
  double widest = 0;
  for (const ChartSeries& s : chart.series) widest = std::max(widest, text_width(cr, s.label));
  const double legend_width = legend ? pad * 3 + swatch + widest : 0;
  const double legend_gap = legend ? 12 * unit : 0;
  const Box plot{cell.x + 72 * unit, cell.y + 46 * unit, cell.width - (72 + 24) * unit - legend_width - legend_gap,
                 cell.height - (46 + 62) * unit};
  const auto px = [&](double x) { return plot.x + (x - chart.x_min) / (chart.x_max - chart.x_min) * plot.width; };
  const auto py = [&](double y) {
    return plot.y + plot.height - (y - chart.y_min) / (chart.y_max - chart.y_min) * plot.height;
  };

  // Title.
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  set_font(cr, title_font, true);
  show_text(cr, fitted(cr, chart.title, cell.width - 8 * unit), cell.x + cell.width / 2, cell.y + 28 * unit, 0.5);

  // Grid, ticks and tick labels.
  set_font(cr, font);
  const int ticks = static_cast<int>(std::lround((chart.x_max - chart.x_min) / chart.tick_step));
  const int label_every = plot.width < 320 ? 2 : 1;
  cairo_set_line_width(cr, 1);
  for (int i = 0; i <= ticks; ++i) {
    const double v = chart.x_min + i * chart.tick_step;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, std::round(px(v)) + 0.5, plot.y);
    cairo_line_to(cr, std::round(px(v)) + 0.5, plot.y + plot.height);
    cairo_stroke(cr);
    if (i % label_every == 0) {
      cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
      show_text(cr, tick_label(v, chart.tick_step), px(v), plot.y + plot.height + 20 * unit, 0.5);
    }
  }
  const int y_ticks = static_cast<int>(std::lround((chart.y_max - chart.y_min) / chart.tick_step));
  const int y_label_every = plot.height < 240 ? 2 : 1;
  for (int i = 0; i <= y_ticks; ++i) {
    const double v = chart.y_min + i * chart.tick_step;
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, plot.x, std::round(py(v)) + 0.5);
    cairo_line_to(cr, plot.x + plot.width, std::round(py(v)) + 0.5);
    cairo_stroke(cr);
    if (i % y_label_every == 0) {
      cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
      show_text(cr, tick_label(v, chart.tick_step), plot.x - 8 * unit, py(v) + font * 0.35, 1);
    }
  }
  cairo_set_source_rgb(cr, 0.25, 0.25, 0.25);
  cairo_rectangle(cr, plot.x + 0.5, plot.y + 0.5, plot.width, plot.height);
  cairo_stroke(cr);

  // Axis titles.
  cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
  show_text(cr, chart.x_label, plot.x + plot.width / 2, plot.y + plot.height + 46 * unit, 0.5);
  cairo_save(cr);
  cairo_translate(cr, cell.x + 22 * unit, plot.y + plot.height / 2);
  cairo_rotate(cr, -M_PI / 2);
  show_text(cr, chart.y_label, 0, 0, 0.5);
  cairo_restore(cr);

  // The series, clipped to the plot; a point below the y range breaks the line.
  cairo_save(cr);
  cairo_rectangle(cr, plot.x, plot.y, plot.width + 1, plot.height + 1);
  cairo_clip(cr);
  cairo_set_line_width(cr, 2 * unit);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  for (const ChartSeries& s : chart.series) {
    set_colour(cr, s.colour);
    bool drawing = false;
    for (size_t i = 0; i < std::min(s.x.size(), s.y.size()); ++i) {
      if (!(s.y[i] >= chart.y_min)) {
        drawing = false;
        continue;
      }
      if (drawing)
        cairo_line_to(cr, px(s.x[i]), py(s.y[i]));
      else
        cairo_move_to(cr, px(s.x[i]), py(s.y[i]));
      drawing = true;
    }
    cairo_stroke(cr);
  }
  cairo_restore(cr);

  if (!legend) return;
  set_font(cr, font * 0.9);
  const double height = pad * 2 + line_height * static_cast<double>(chart.series.size());
  const Box box{plot.x + plot.width + legend_gap, plot.y, legend_width, height};
  cairo_rectangle(cr, box.x + 0.5, box.y + 0.5, box.width, box.height);
  cairo_set_source_rgb(cr, 0.7, 0.7, 0.7);
  cairo_set_line_width(cr, 1);
  cairo_stroke(cr);
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double mid = box.y + pad + line_height * (static_cast<double>(i) + 0.5);
    set_colour(cr, chart.series[i].colour);
    cairo_set_line_width(cr, 3 * unit);
    cairo_move_to(cr, box.x + pad, mid);
    cairo_line_to(cr, box.x + pad + swatch, mid);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    show_text(cr, chart.series[i].label, box.x + pad * 2 + swatch, mid + font * 0.3, 0);
  }
}

// The series' colours and labels in one centred row (a grid's shared legend).
void draw_legend_row(cairo_t* cr, const std::vector<ChartSeries>& series, double centre, double baseline) {
  set_font(cr, 13);
  const double swatch = 22, gap = 6, spacing = 18;
  double total = 0;
  for (const ChartSeries& s : series) total += swatch + gap + text_width(cr, s.label) + spacing;
  double x = centre - (total - spacing) / 2;
  for (const ChartSeries& s : series) {
    set_colour(cr, s.colour);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, x, baseline - 4);
    cairo_line_to(cr, x + swatch, baseline - 4);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
    show_text(cr, s.label, x + swatch + gap, baseline, 0);
    x += swatch + gap + text_width(cr, s.label) + spacing;
  }
}

void write_png(cairo_surface_t* surface, const std::string& path) {
  cairo_surface_flush(surface);
  const cairo_status_t status = cairo_surface_write_to_png(surface, path.c_str());
  if (status != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(fmt::format("{}: cannot write the PNG ({})", path, cairo_status_to_string(status)));
  }
}

std::pair<Surface, Context> white_canvas(int width, int height) {
  if (width <= 0 || height <= 0) throw std::runtime_error("a chart needs a positive size");
  Surface surface(cairo_image_surface_create(CAIRO_FORMAT_RGB24, width, height));
  Context cr(cairo_create(surface.get()));
  if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS) {
    throw std::runtime_error(
        fmt::format("cannot draw a {}x{} chart ({})", width, height, cairo_status_to_string(cairo_status(cr.get()))));
  }
  cairo_set_source_rgb(cr.get(), 1, 1, 1);
  cairo_paint(cr.get());
  return {std::move(surface), std::move(cr)};
}

}  // namespace

void write_line_chart_png(const LineChart& chart, int width, int height, const std::string& path) {
  auto [surface, cr] = white_canvas(width, height);
  draw_chart(cr.get(), chart, {0, 0, static_cast<double>(width), static_cast<double>(height)});
  write_png(surface.get(), path);
}

void write_chart_grid_png(const std::vector<LineChart>& charts, int columns, int cell_width, int cell_height,
                          const std::string& title, const std::string& path) {
  columns = std::max(1, columns);
  const int rows = std::max(1, static_cast<int>((charts.size() + columns - 1) / columns));
  const int header = kGridTitleHeight;
  auto [surface, cr] = white_canvas(columns * cell_width, header + rows * cell_height);
  cairo_set_source_rgb(cr.get(), 0.1, 0.1, 0.1);
  set_font(cr.get(), 20, true);
  show_text(cr.get(), title, columns * cell_width / 2.0, 30, 0.5);
  if (!charts.empty()) draw_legend_row(cr.get(), charts.front().series, columns * cell_width / 2.0, 58);
  for (size_t i = 0; i < charts.size(); ++i) {
    const double x = static_cast<double>(i % columns) * cell_width;
    const double y = header + static_cast<double>(i / columns) * cell_height;
    draw_chart(cr.get(), charts[i], {x, y, static_cast<double>(cell_width), static_cast<double>(cell_height)});
  }
  write_png(surface.get(), path);
}

Rgb viridis(double position) {
  // Matplotlib's viridis at 0, 1/8, ..., 1.
  static constexpr Rgb kStops[] = {{0.267, 0.005, 0.329}, {0.279, 0.175, 0.483}, {0.230, 0.322, 0.546},
                                   {0.173, 0.449, 0.558}, {0.128, 0.567, 0.551}, {0.153, 0.683, 0.498},
                                   {0.369, 0.789, 0.383}, {0.678, 0.864, 0.190}, {0.993, 0.906, 0.144}};
  constexpr size_t n = std::size(kStops);
  const double p = std::clamp(position, 0.0, 1.0) * (n - 1);
  const size_t i = std::min(static_cast<size_t>(p), n - 2);
  const double f = p - static_cast<double>(i);
  return {kStops[i].r + f * (kStops[i + 1].r - kStops[i].r), kStops[i].g + f * (kStops[i + 1].g - kStops[i].g),
          kStops[i].b + f * (kStops[i + 1].b - kStops[i].b)};
}

}  // namespace dtrain::vision
