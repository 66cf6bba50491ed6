#pragma once

namespace dtrain::vision {

// An axis-aligned box in COCO's [x, y, width, height] convention (pixels,
// top-left corner first).
struct BoundingBox {
  double x = 0;
  double y = 0;
  double width = 0;
  double height = 0;

  friend bool operator==(const BoundingBox&, const BoundingBox&) = default;
};

}  // namespace dtrain::vision
