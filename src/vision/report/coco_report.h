#pragma once

#include <string>
#include <vector>

#include "vision/evaluation/coco_evaluator.h"

namespace dtrain::vision {

// `dtrain coco-eval --report DIR`: the pictures and tables of one
// evaluation, every file prefixed with the IoU type (bbox_, segm_) so both
// runs can share DIR:
//   <type>_per_category.csv, <type>_per_category.md  per-category AP table
//   <type>_pr.json                                    precision/recall arrays
//   <type>_pr_{all,small,medium,large}.png            precision/recall curves
//   <type>_pr_per_category.png                        small multiples by category
//   <type>_errors.json                                TIDE-style error breakdown
// Layouts: docs/maskrcnn.md, "Evaluation report".

// Creates `dir` (and its parents) and checks that a file can be written in
// it; CocoError "DIR: cannot write the report there (reason)" otherwise.
// Called before the evaluation so a bad DIR fails fast.
void prepare_report_directory(const std::string& dir);

// Writes the files for an accumulated `evaluator` built on gt and dt;
// `summary` is its summarize(). Returns the paths written. A file that
// cannot be written is an error naming it (CocoError; std::runtime_error
// for a PNG).
std::vector<std::string> write_coco_report(const std::string& dir, const CocoEvaluator& evaluator,
                                           const CocoSummary& summary, const CocoGroundTruth& gt,
                                           const CocoDetections& dt);

}  // namespace dtrain::vision
