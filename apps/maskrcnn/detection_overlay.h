#pragma once

#include <array>
#include <cstdint>

#include "vision/inference/image_detections.h"
#include "vision/data/image.h"

namespace dtrain::maskrcnn {

// A copy of `image` with every detection drawn on it in its category's
// colour: the mask blended in at half opacity, the box outlined. The
// lowest-scoring detection is drawn first, so the best ones stay on top.
// Pixels outside every mask and box outline are left exactly as they were.
vision::RgbImage draw_detections(const vision::RgbImage& image, const vision::inference::ImageDetections& detections);

// A saturated colour per category id, the same in every image and run;
// neighbouring ids get hues far apart.
std::array<uint8_t, 3> category_colour(int64_t category_id);

}  // namespace dtrain::maskrcnn
