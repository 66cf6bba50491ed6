#include "vision/inference/coco_results.h"

#include <vector>

#include "vision/coco/rle_string.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision::inference {
namespace {

// COCO reads masks down the columns; the model's are row-major.
std::vector<uint8_t> column_major(const std::vector<uint8_t>& row_major, uint32_t height, uint32_t width) {
  std::vector<uint8_t> out(row_major.size());
  for (uint32_t y = 0; y < height; ++y) {
    for (uint32_t x = 0; x < width; ++x) out[size_t{x} * height + y] = row_major[size_t{y} * width + x];
  }
  return out;
}

}  // namespace

nlohmann::ordered_json coco_results(const ImageDetections& detections, int64_t image_id) {
  nlohmann::ordered_json results = nlohmann::ordered_json::array();
  for (const DetectedInstance& instance : detections.instances) {
    const auto& [x1, y1, x2, y2] = instance.box;
    nlohmann::ordered_json result;
    result["image_id"] = image_id;
    result["category_id"] = instance.label;
    result["bbox"] = {x1, y1, x2 - x1, y2 - y1};
    result["score"] = instance.score;
    if (!instance.mask.empty()) {
      const vision::RunLengthMask rle = vision::rle_encode(
          column_major(instance.mask, detections.height, detections.width), detections.height, detections.width);
      result["segmentation"] = {{"size", {detections.height, detections.width}},
                                {"counts", vision::rle_counts_to_string(rle)}};
    }
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace dtrain::vision::inference
