#include "vision/report/line_chart.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "vision/report/category_table.h"
#include "vision/report/precision_recall_curves.h"
#include "vision/report/precision_recall_plots.h"
#include "tests/vision/report/report_test_data.h"

namespace dtrain::vision {
namespace {

struct PngHeader {
  bool signature = false;
  uint32_t width = 0, height = 0;
};

// The signature and the IHDR chunk's size, which must come first.
PngHeader read_png_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  PngHeader h;
  if (bytes.size() < 24) return h;
  h.signature = bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 && bytes.compare(12, 4, "IHDR") == 0;
  const auto be32 = [&](size_t at) {
    return uint32_t(uint8_t(bytes[at])) << 24 | uint32_t(uint8_t(bytes[at + 1])) << 16 |
           uint32_t(uint8_t(bytes[at + 2])) << 8 | uint32_t(uint8_t(bytes[at + 3]));
  };
  h.width = be32(16);
  h.height = be32(20);
  return h;
}

class TempDirectory {
 public:
  TempDirectory() {
    path_ = std::filesystem::temp_directory_path() /
            ("dtrain-report-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDirectory() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  std::string str() const { return path_.string(); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

LineChart two_lines() {
  LineChart chart;
  chart.title = "a chart";
  chart.x_label = "recall";
  chart.y_label = "precision";
  chart.series.push_back({"rising", viridis(0), {0, 0.5, 1}, {0, 0.5, 1}});
  chart.series.push_back({"with a gap", viridis(0.8), {0, 0.5, 1}, {1, -1, 0.2}});
  return chart;
}

TEST(LineChart, WritesAPngOfTheAskedSize) {
  const TempDirectory dir;
  const std::string path = dir.str() + "/chart.png";
  write_line_chart_png(two_lines(), 640, 480, path);
  const PngHeader h = read_png_header(path);
  EXPECT_TRUE(h.signature);
  EXPECT_EQ(h.width, 640u);
  EXPECT_EQ(h.height, 480u);
}

TEST(LineChart, GridIsColumnsWideAndHasRoomForTheTitle) {
  const TempDirectory dir;
  const std::string path = dir.str() + "/grid.png";
  write_chart_grid_png({two_lines(), two_lines(), two_lines(), two_lines(), two_lines()}, 2, 300, 200, "grid", path);
  const PngHeader h = read_png_header(path);
  EXPECT_TRUE(h.signature);
  EXPECT_EQ(h.width, 600u);
  EXPECT_EQ(h.height, uint32_t(kGridTitleHeight) + 3 * 200);
}

TEST(LineChart, AnUnwritablePathIsAnErrorNamingIt) {
  const TempDirectory dir;
  const std::string path = dir.str() + "/missing/chart.png";
  try {
    write_line_chart_png(two_lines(), 100, 100, path);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path + ": cannot write the PNG", 0), 0u) << e.what();
  }
}

TEST(PrecisionRecallPlots, OnePngPerAreaAndTheCategoryGrid) {
  const TempDirectory dir;
  const testing::Evaluation& e = testing::fake100(IouType::kSegm);
  const PrecisionRecallCurves curves = precision_recall_curves(*e.evaluator);
  const auto written = write_precision_recall_plots(curves, e.summary, dir.str(), "segm");
  ASSERT_EQ(written.size(), 4u);
  for (const char* area : {"all", "small", "medium", "large"}) {
    const std::string path = dir.str() + "/segm_pr_" + area + ".png";
    EXPECT_NE(std::find(written.begin(), written.end(), path), written.end()) << path;
    const PngHeader h = read_png_header(path);
    EXPECT_TRUE(h.signature) << path;
    EXPECT_EQ(h.width, uint32_t(kPlotWidth));
    EXPECT_EQ(h.height, uint32_t(kPlotHeight));
  }
  const std::string grid =
      write_category_precision_recall_plot(curves, category_table(*e.evaluator, e.summary), dir.str(), "segm");
  EXPECT_EQ(grid, dir.str() + "/segm_pr_per_category.png");
  const PngHeader h = read_png_header(grid);
  EXPECT_TRUE(h.signature);
  EXPECT_EQ(h.width, uint32_t(kGridColumns * kGridCellWidth));
  EXPECT_EQ(h.height, uint32_t(kGridTitleHeight) + 4 * kGridCellHeight);  // 16 categories, 4 wide
}

}  // namespace
}  // namespace dtrain::vision
