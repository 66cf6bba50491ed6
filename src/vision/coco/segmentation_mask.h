#pragma once

#include <cstdint>

#include "vision/coco/coco_annotation.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// The mask of a segmentation, following COCO's annToRLE: polygons are
// rasterized at the image's size and merged into one mask; RLEs keep their
// own size. Throws CocoError for a missing or unusable segmentation.
RunLengthMask segmentation_mask(const Segmentation& segmentation, uint32_t image_height, uint32_t image_width);

}  // namespace dtrain::vision
