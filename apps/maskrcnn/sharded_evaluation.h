#pragma once

// COCO evaluation spread over the ranks of a job: rank r runs inference on
// images r, r + size, ... of the evaluation set, the detections are gathered
// to rank 0, which scores them with dtrain's COCO evaluator (pycocotools'
// numbers) and writes them as a COCO results file.
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "vision/modeling/mask_rcnn.h"

namespace dtrain::maskrcnn {

struct EvaluationData {
  std::string annotations;  // COCO instances JSON
  std::string images;       // folder of its images
};

// Named scalars in a fixed order: bbox/AP, bbox/AP50, ... segm/ARl, then
// <type>/AP-<category name> per category. Only rank 0's list is filled.
using EvaluationScalars = std::vector<std::pair<std::string, double>>;

// Every rank calls this (it holds collectives). The model is switched to
// eval() and back to train() if it was training. Rank 0 prints the
// pycocotools summaries and one line
//   eval: iter: N  bbox/AP: 0.6123  bbox/AP50: ...  segm/AP: ...
// and writes `results_path` (the directories are created). `iteration` only
// labels the output. Throws std::runtime_error naming the file for bad data.
EvaluationScalars evaluate_on_ranks(vision::modeling::MaskRcnnImpl& model, const EvaluationData& data,
                                    const std::filesystem::path& results_path, int64_t iteration);

}  // namespace dtrain::maskrcnn
