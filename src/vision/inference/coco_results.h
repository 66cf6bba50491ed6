#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "vision/inference/image_detections.h"

namespace dtrain::vision::inference {

// The detections of one image as COCO results, the format `dtrain coco-eval
// --dt` and pycocotools' loadRes read: an array of {image_id, category_id,
// bbox [x, y, width, height], score, segmentation {size [h, w], counts}}, the
// counts being the compressed RLE string of the mask above 0.5 (left out
// when the model has no mask head). category_id is the model's label as it
// is: torchvision's COCO models number their classes by COCO category id.
nlohmann::ordered_json coco_results(const ImageDetections& detections, int64_t image_id);

}  // namespace dtrain::vision::inference
