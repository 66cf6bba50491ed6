#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vision/coco/coco_annotation.h"

namespace dtrain::vision {

// The outer contours of a binary mask (row-major, height x width, nonzero =
// foreground) as COCO polygons, one per 4-connected region, in the order of
// each region's first pixel in raster order. Each contour follows the
// pixels' outer edges and keeps only its corners. Holes are not traced: a
// region with a hole comes back filled.
//
// Coordinates are placed so that COCO's rasteriser (rle_from_polygon, its
// frPoly) gives back exactly the region's pixels for hole-free regions.
Polygons trace_outer_contours(std::span<const uint8_t> mask, uint32_t height, uint32_t width);

// The 4-connected regions of a mask: a label per pixel (0 background, 1..n)
// and n.
std::vector<uint32_t> label_regions(std::span<const uint8_t> mask, uint32_t height, uint32_t width, uint32_t* count);

}  // namespace dtrain::vision
