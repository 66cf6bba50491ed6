#include "vision/evaluation/coco_detections.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "vision/coco/coco_error.h"
#include "vision/coco/json_entry.h"
#include "vision/coco/run_length_mask.h"
#include "vision/coco/segmentation_mask.h"

namespace dtrain::vision {
namespace {

constexpr const char* kList = "results";

}  // namespace

CocoDetections CocoDetections::load(const CocoGroundTruth& gt, const std::string& path) {
  return from_json(gt, read_json_file(path), path);
}

CocoDetections CocoDetections::parse(const CocoGroundTruth& gt, std::string_view json_text,
                                     const std::string& source) {
  return from_json(gt, parse_json_text(json_text, source), source);
}

CocoDetections CocoDetections::from_json(const CocoGroundTruth& gt, const nlohmann::json& results,
                                         const std::string& source) {
  if (!results.is_array()) {
    throw CocoError(fmt::format("{}: results must be a JSON list of detections, got {}", source,
                                results.type_name()));
  }
  CocoDetections out;
  if (results.empty()) return out;

  // Like loadRes, every image must be known before anything else is read.
  for (size_t i = 0; i < results.size(); ++i) {
    const JsonEntry entry(results[i], source, kList, i);
    const int64_t image_id = entry.integer("image_id");
    if (gt.find_image(image_id) == nullptr) {
      entry.fail(fmt::format("image_id {} is not an image of the ground truth {}", image_id,
                             gt.source()));
    }
  }

  const auto& first = results[0];
  const auto first_bbox = first.find("bbox");
  const bool boxes = first_bbox != first.end() && !(first_bbox->is_array() && first_bbox->empty());
  if (!boxes && !first.contains("segmentation")) {
    JsonEntry(first, source, kList, 0).fail("needs a 'bbox' or a 'segmentation'");
  }

  out.detections_.reserve(results.size());
  for (size_t i = 0; i < results.size(); ++i) {
    const JsonEntry entry(results[i], source, kList, i);
    CocoAnnotation det;
    det.id = static_cast<int64_t>(i) + 1;
    det.image_id = entry.integer("image_id");
    det.category_id = entry.integer("category_id");
    det.score = entry.number("score");
    det.iscrowd = false;
    if (boxes) {
      det.bbox = entry.box("bbox");
      const BoundingBox& b = det.bbox;
      if (entry.has("segmentation")) {
        det.segmentation = entry.segmentation("segmentation");
      } else {
        const double x1 = b.x, x2 = b.x + b.width, y1 = b.y, y2 = b.y + b.height;
        det.segmentation = Polygons{{x1, y1, x1, y2, x2, y2, x2, y1}};
      }
      det.area = b.width * b.height;
    } else {
      det.segmentation = entry.segmentation("segmentation");
      const CocoImage* image = gt.find_image(det.image_id);
      RunLengthMask mask;
      try {
        mask = segmentation_mask(det.segmentation, image->height, image->width);
      } catch (const CocoError& e) {
        entry.fail(fmt::format("field 'segmentation': {}", e.what()));
      }
      det.area = static_cast<double>(rle_area(mask));
      det.bbox = entry.has("bbox") ? entry.box("bbox") : rle_to_bbox(mask);
      // Keep the decoded runs: the evaluator needs them and decoding is not free.
      det.segmentation = std::move(mask);
    }
    out.detections_.push_back(std::move(det));
  }
  return out;
}

}  // namespace dtrain::vision
