#include "vision/report/coco_report.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/report/category_table.h"
#include "vision/report/category_table_format.h"
#include "vision/report/error_breakdown.h"
#include "vision/report/precision_recall_curves.h"
#include "vision/report/precision_recall_plots.h"

namespace dtrain::vision {
namespace {

void write_text(const std::string& path, const std::string& text, std::vector<std::string>& written) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) throw CocoError(fmt::format("{}: cannot write the file ({})", path, std::strerror(errno)));
  written.push_back(path);
}

}  // namespace

void prepare_report_directory(const std::string& dir) {
  const auto fail = [&](const std::string& reason) {
    throw CocoError(fmt::format("{}: cannot write the report there ({})", dir, reason));
  };
  if (dir.empty()) fail("empty path");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(ec.message());
  if (!std::filesystem::is_directory(dir, ec)) fail("not a directory");
  // access() answers for the real user; a probe file answers for this process.
  const std::string probe = fmt::format("{}/.dtrain-report-probe-{}", dir, getpid());
  {
    std::ofstream out(probe);
    if (!out) fail(std::strerror(errno));
  }
  std::filesystem::remove(probe, ec);
}

std::vector<std::string> write_coco_report(const std::string& dir, const CocoEvaluator& evaluator,
                                           const CocoSummary& summary, const CocoGroundTruth& gt,
                                           const CocoDetections& dt) {
  prepare_report_directory(dir);
  const std::string prefix(iou_type_name(evaluator.params().iou_type));
  const std::string base = dir + "/" + prefix;
  std::vector<std::string> written;

  const CategoryTable table = category_table(evaluator, summary);
  const ErrorBreakdown errors = error_breakdown(evaluator, gt, dt);
  write_text(base + "_per_category.csv", category_table_csv(table), written);
  write_text(base + "_per_category.md", category_table_markdown(table, error_breakdown_markdown(errors)), written);
  write_text(base + "_errors.json", to_json(errors).dump(1) + "\n", written);

  const PrecisionRecallCurves curves = precision_recall_curves(evaluator);
  write_text(base + "_pr.json", to_json(curves).dump() + "\n", written);
  for (const std::string& path : write_precision_recall_plots(curves, summary, dir, prefix)) written.push_back(path);
  const std::string grid = write_category_precision_recall_plot(curves, table, dir, prefix);
  if (!grid.empty()) written.push_back(grid);
  return written;
}

}  // namespace dtrain::vision
