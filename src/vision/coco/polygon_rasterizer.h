#pragma once

#include <cstdint>
#include <span>

#include "vision/coco/bounding_box.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// Rasterizes a closed polygon given as [x0, y0, x1, y1, ...] (an odd trailing
// value is ignored) into a height x width mask exactly as the COCO API's
// frPoly does: the outline is walked on a grid five times finer than the
// pixels, and a pixel is inside when its centre lies below an edge crossing of
// its column. Pixels outside the image are clipped.
RunLengthMask rle_from_polygon(std::span<const double> xy, uint32_t height, uint32_t width);

// The mask of a box, COCO's frBbox: the polygon through its four corners.
RunLengthMask rle_from_box(const BoundingBox& box, uint32_t height, uint32_t width);

}  // namespace dtrain::vision
