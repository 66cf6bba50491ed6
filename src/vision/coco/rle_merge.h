#pragma once

#include <span>

#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// The union (or, with `intersect`, the intersection) of masks of one size,
// computed on the runs without decoding. No masks give an empty 0x0 mask;
// masks of different sizes give an empty 0x0 mask too, as in the COCO API.
RunLengthMask rle_merge(std::span<const RunLengthMask> masks, bool intersect = false);

}  // namespace dtrain::vision
