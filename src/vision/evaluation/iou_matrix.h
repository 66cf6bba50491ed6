#pragma once

#include <span>
#include <vector>

#include "vision/coco/bounding_box.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// IoU of every detection with every ground truth of one image and category,
// as COCO's maskUtils.iou computes it: out[d * G + g], crowd rule applied
// per ground truth. Empty when either side is empty.
std::vector<double> box_iou_matrix(std::span<const BoundingBox> dts, std::span<const BoundingBox> gts,
                                   std::span<const uint8_t> gt_is_crowd);

std::vector<double> mask_iou_matrix(std::span<const RunLengthMask* const> dts,
                                    std::span<const RunLengthMask* const> gts, std::span<const uint8_t> gt_is_crowd);
// The same with the masks' boxes (rle_to_bbox of each mask) already known.
std::vector<double> mask_iou_matrix(std::span<const RunLengthMask* const> dts, std::span<const BoundingBox> dt_boxes,
                                    std::span<const RunLengthMask* const> gts, std::span<const BoundingBox> gt_boxes,
                                    std::span<const uint8_t> gt_is_crowd);

}  // namespace dtrain::vision
