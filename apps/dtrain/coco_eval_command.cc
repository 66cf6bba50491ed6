#include "apps/dtrain/coco_eval_command.h"

#include <chrono>
#include <cstdio>
#include <fstream>
#include <future>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/coco_evaluator.h"
#include "vision/report/coco_report.h"
#include "concurrency/parallel_for.h"

namespace dtrain::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void write_report(const std::string& path, const std::string& gt, const std::string& dt,
                  const vision::CocoSummary& summary, int threads, const nlohmann::ordered_json& timing) {
  nlohmann::ordered_json report;
  report["iou_type"] = std::string(vision::iou_type_name(summary.iou_type));
  report["gt"] = gt;
  report["dt"] = dt;
  nlohmann::ordered_json stats = nlohmann::ordered_json::object();
  for (const auto& s : summary.stats) stats[s.name] = s.value;
  report["stats"] = stats;
  nlohmann::ordered_json categories = nlohmann::ordered_json::array();
  for (const auto& c : summary.per_category) {
    categories.push_back({{"id", c.category_id}, {"name", c.name}, {"ap", c.ap}});
  }
  report["per_category_ap"] = categories;
  report["threads"] = threads;
  report["seconds"] = timing;
  std::ofstream out(path);
  out << report.dump(2) << "\n";
  out.close();
  if (!out) throw vision::CocoError(fmt::format("{}: cannot write the report", path));
}

// What one evaluation holds. The process ends right after the command, so it
// is left to the operating system instead of being freed object by object
// (half a million detections with their runs take a tenth of a second); it
// stays reachable from this global, so leak checkers report nothing.
struct Evaluation {
  vision::CocoGroundTruth gt;
  vision::CocoDetections dt;
  std::optional<vision::CocoEvaluator> evaluator;
};
Evaluation* kept_until_exit = nullptr;

}  // namespace

CocoEvalCommand::CocoEvalCommand(CLI::App& parent) {
  app_ = parent.add_subcommand("coco-eval", "COCO box or mask evaluation (pycocotools' COCOeval, multithreaded)");
  app_->add_option("--gt", gt_path_, "Ground truth in COCO format (instances_*.json)")
      ->required()
      ->type_name("GT.json");
  app_->add_option("--dt", dt_path_,
                   "Detection results: a JSON list of {image_id, category_id, "
                   "score, bbox and/or segmentation}")
      ->required()
      ->type_name("RESULTS.json");
  app_->add_option("--iou-type", iou_type_, "bbox (boxes) or segm (masks)")
      ->required()
      ->check(CLI::IsMember({"bbox", "segm"}));
  app_->add_option("--json", json_path_, "Also write the 12 statistics and per-category AP to this JSON file")
      ->type_name("OUT.json");
  app_->add_option("--report", report_dir_,
                   "Also write per-category tables (CSV, Markdown), precision/recall arrays (JSON), "
                   "PR curves (PNG) and an error breakdown into this directory, prefixed bbox_ or segm_")
      ->type_name("DIR");
  app_->add_option("--threads", threads_, "Evaluation threads (0: one per core)")
      ->check(CLI::NonNegativeNumber)
      ->type_name("N")
      ->default_val(0);
  app_->footer(
      "Prints pycocotools' summary (AP, AP50, AP75, APs/m/l, AR1/10/100, ARs/m/l).\n"
      "Exit status: 0 on success, 1 for unreadable or malformed input, 2 for usage errors.\n");
}

int CocoEvalCommand::execute() const {
  try {
    const vision::IouType type = vision::parse_iou_type(iou_type_);
    if (!report_dir_.empty()) vision::prepare_report_directory(report_dir_);  // fail before the work
    nlohmann::ordered_json timing;
    auto start = Clock::now();
    // The results file is read and parsed while the ground truth loads (both
    // parsers are single-threaded); the ground truth's errors come first.
    std::future<vision::ParsedCocoResults> results =
        std::async(std::launch::async, [this] { return vision::ParsedCocoResults::load(dt_path_); });
    kept_until_exit = new Evaluation{vision::CocoGroundTruth::load(gt_path_, threads_), {}, {}};
    const vision::CocoGroundTruth& gt = kept_until_exit->gt;
    kept_until_exit->dt = vision::CocoDetections::read(gt, results.get(), threads_);
    const vision::CocoDetections& dt = kept_until_exit->dt;
    timing["load"] = seconds_since(start);
    std::fprintf(stderr, "loaded %zu images, %zu annotations, %zu detections (t=%.2fs)\n", gt.images().size(),
                 gt.annotations().size(), dt.detections().size(), timing["load"].get<double>());

    vision::CocoEvaluator& evaluator = kept_until_exit->evaluator.emplace(gt, dt, type, threads_);
    start = Clock::now();
    evaluator.evaluate();
    timing["evaluate"] = seconds_since(start);
    start = Clock::now();
    evaluator.accumulate();
    timing["accumulate"] = seconds_since(start);
    std::fprintf(stderr, "evaluated %s (t=%.2fs), accumulated (t=%.2fs)\n", iou_type_.c_str(),
                 timing["evaluate"].get<double>(), timing["accumulate"].get<double>());

    const vision::CocoSummary summary = evaluator.summarize();
    std::fputs(summary.text().c_str(), stdout);
    std::fflush(stdout);
    if (!json_path_.empty()) {
      write_report(json_path_, gt_path_, dt_path_, summary, concurrency::resolve_thread_count(threads_), timing);
    }
    if (!report_dir_.empty()) {
      start = Clock::now();
      const auto written = vision::write_coco_report(report_dir_, evaluator, summary, gt, dt);
      std::fprintf(stderr, "wrote %zu report files to %s (t=%.2fs)\n", written.size(), report_dir_.c_str(),
                   seconds_since(start));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain coco-eval: %s\n", e.what());
    return 1;
  }
}

}  // namespace dtrain::cli
