#include "vision/coco/segmentation_mask.h"

#include <vector>

#include "vision/coco/coco_error.h"
#include "vision/coco/polygon_rasterizer.h"
#include "vision/coco/rle_merge.h"
#include "vision/coco/rle_string.h"

namespace dtrain::vision {
namespace {

RunLengthMask polygons_mask(const Polygons& polygons, uint32_t height, uint32_t width) {
  if (polygons.empty()) throw CocoError("segmentation is an empty list of polygons");
  // COCO's frPyObjects takes a list whose first entry has exactly four numbers
  // for a list of [x, y, w, h] boxes, and rejects shorter first entries.
  const size_t first = polygons[0].size();
  if (first < 4) {
    throw CocoError("segmentation polygon has " + std::to_string(first) + " numbers, expected at least 6");
  }
  std::vector<RunLengthMask> parts;
  parts.reserve(polygons.size());
  for (const auto& polygon : polygons) {
    if (first == 4) {
      if (polygon.size() != 4) throw CocoError("segmentation mixes boxes and polygons");
      parts.push_back(rle_from_box({polygon[0], polygon[1], polygon[2], polygon[3]}, height, width));
    } else {
      parts.push_back(rle_from_polygon(polygon, height, width));
    }
  }
  return rle_merge(parts, /*intersect=*/false);
}

}  // namespace

RunLengthMask segmentation_mask(const Segmentation& segmentation, uint32_t image_height, uint32_t image_width) {
  if (const auto* polygons = std::get_if<Polygons>(&segmentation)) {
    return polygons_mask(*polygons, image_height, image_width);
  }
  if (const auto* compressed = std::get_if<CompressedRle>(&segmentation)) {
    return rle_from_counts_string(compressed->counts, compressed->height, compressed->width);
  }
  if (const auto* mask = std::get_if<RunLengthMask>(&segmentation)) return *mask;
  throw CocoError("annotation has no segmentation");
}

}  // namespace dtrain::vision
