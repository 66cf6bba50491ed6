#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace dtrain::vision {

enum class IouType { kBbox, kSegm };

std::string_view iou_type_name(IouType type);   // "bbox" or "segm"
IouType parse_iou_type(std::string_view name);  // throws CocoError

// An object-size bucket; an area belongs to it when min <= area <= max.
struct AreaRange {
  double min = 0;
  double max = 0;
  std::string label;  // "all", "small", "medium", "large"
};

// COCOeval's parameters. The defaults are COCO's: IoU thresholds
// .50:.05:.95, recall thresholds 0:.01:1 (both as numpy.linspace builds
// them), areas all / small (< 32²) / medium / large (> 96²), and at most
// 1, 10 and 100 detections per image and category.
struct EvaluationParams {
  IouType iou_type = IouType::kBbox;
  std::vector<double> iou_thresholds;
  std::vector<double> recall_thresholds;
  std::vector<AreaRange> area_ranges;
  std::vector<int> max_detections;  // ascending

  static EvaluationParams coco_defaults(IouType type);
};

}  // namespace dtrain::vision
