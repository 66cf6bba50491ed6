#include "vision/evaluation/evaluation_params.h"

#include <cmath>

#include "vision/coco/coco_error.h"
#include "vision/evaluation/numpy_arithmetic.h"

namespace dtrain::vision {

std::string_view iou_type_name(IouType type) { return type == IouType::kBbox ? "bbox" : "segm"; }

IouType parse_iou_type(std::string_view name) {
  if (name == "bbox") return IouType::kBbox;
  if (name == "segm") return IouType::kSegm;
  throw CocoError("unknown IoU type '" + std::string(name) + "' (expected bbox or segm)");
}

EvaluationParams EvaluationParams::coco_defaults(IouType type) {
  EvaluationParams p;
  p.iou_type = type;
  // np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
  p.iou_thresholds = numpy_linspace(.5, 0.95, static_cast<size_t>(std::nearbyint((0.95 - .5) / .05)) + 1);
  // np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
  p.recall_thresholds = numpy_linspace(.0, 1.00, static_cast<size_t>(std::nearbyint((1.00 - .0) / .01)) + 1);
  const double huge = 1e5 * 1e5;
  p.area_ranges = {{0, huge, "all"}, {0, 32 * 32, "small"}, {32 * 32, 96 * 96, "medium"}, {96 * 96, huge, "large"}};
  p.max_detections = {1, 10, 100};
  return p;
}

}  // namespace dtrain::vision
