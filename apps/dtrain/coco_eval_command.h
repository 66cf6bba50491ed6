#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace dtrain::cli {

// `dtrain coco-eval --gt GT.json --dt RESULTS.json --iou-type bbox|segm
// [--json OUT.json] [--report DIR] [--threads N]`: COCO box or mask
// evaluation with pycocotools' numbers. Prints pycocotools' twelve summary
// lines, optionally writes them with per-category AP as JSON, and with
// --report the pictures and tables of vision/report/coco_report.h.
class CocoEvalCommand {
 public:
  explicit CocoEvalCommand(CLI::App& parent);

  CLI::App* subcommand() const { return app_; }

  // Runs after parsing. Returns 0, or 1 with a one-line
  // "dtrain coco-eval: ..." message on stderr for bad input.
  int execute() const;

 private:
  CLI::App* app_;
  std::string gt_path_, dt_path_, iou_type_, json_path_, report_dir_;
  int threads_ = 0;
};

}  // namespace dtrain::cli
