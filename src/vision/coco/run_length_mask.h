#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vision/coco/bounding_box.h"

namespace dtrain::vision {

// A binary mask of height x width pixels as COCO stores it: the pixels are
// read in column-major order (down the first column, then the next) and
// `counts` holds the lengths of alternating runs, starting with a run of
// zeros (which may be empty). Counts are 32-bit like the COCO API's, so all
// arithmetic wraps the way pycocotools' does.
struct RunLengthMask {
  uint32_t height = 0;
  uint32_t width = 0;
  std::vector<uint32_t> counts;

  friend bool operator==(const RunLengthMask&, const RunLengthMask&) = default;
};

// Encodes a column-major mask of height*width bytes. As in the COCO API a
// new run starts wherever the byte value changes, so masks should hold 0/1.
RunLengthMask rle_encode(std::span<const uint8_t> column_major, uint32_t height, uint32_t width);

// The column-major 0/1 pixels of `mask` (height*width bytes).
std::vector<uint8_t> rle_decode(const RunLengthMask& mask);

// Number of foreground pixels: the sum of the odd-indexed runs.
uint32_t rle_area(const RunLengthMask& mask);

// The tight box around the foreground, COCO's toBbox: integer pixel bounds,
// all zero for an empty mask. Like the COCO API, a run of ones that wraps
// from one column into the next widens the box to the full image height.
BoundingBox rle_to_bbox(const RunLengthMask& mask);

}  // namespace dtrain::vision
