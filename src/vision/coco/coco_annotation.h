#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "vision/coco/bounding_box.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// A mask in COCO's compressed form: the counts string as it appeared in the
// JSON, decoded only when a mask is needed.
struct CompressedRle {
  uint32_t height = 0;
  uint32_t width = 0;
  std::string counts;
};

// One or more polygons [x0, y0, x1, y1, ...] whose union is the object.
using Polygons = std::vector<std::vector<double>>;

// The segmentation of an annotation as COCO's JSON allows it: absent,
// polygons, a compressed RLE, or an uncompressed RLE (counts as a list).
using Segmentation = std::variant<std::monostate, Polygons, CompressedRle, RunLengthMask>;

struct CocoImage {
  int64_t id = 0;
  uint32_t height = 0;
  uint32_t width = 0;
};

struct CocoCategory {
  int64_t id = 0;
  std::string name;
};

// A ground-truth annotation or a detection. Detections have iscrowd = false,
// ids 1..N in file order, and an area computed as COCO's loadRes does.
struct CocoAnnotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  double area = 0;
  bool iscrowd = false;
  double score = 0;  // detections only
  BoundingBox bbox;
  Segmentation segmentation;
};

}  // namespace dtrain::vision
