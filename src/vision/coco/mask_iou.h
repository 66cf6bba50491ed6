#pragma once

#include <span>

#include "vision/coco/bounding_box.h"
#include "vision/coco/run_length_mask.h"

namespace dtrain::vision {

// Intersection over union of a detection and a ground-truth box. For a crowd
// ground truth the denominator is the detection's own area (COCO's rule: a
// detection inside a crowd region matches it fully). 0 when they do not
// overlap.
double box_iou(const BoundingBox& dt, const BoundingBox& gt, bool gt_is_crowd);

// The same for masks, with the COCO API's shortcut: when the masks' tight
// boxes (rle_to_bbox) do not overlap the answer is 0 without looking at the
// runs. Masks of different sizes whose boxes overlap give -1.
double rle_iou(const RunLengthMask& dt, const RunLengthMask& gt, bool gt_is_crowd);

// As above with the masks' tight boxes already computed.
double rle_iou(const RunLengthMask& dt, const BoundingBox& dt_box, const RunLengthMask& gt, const BoundingBox& gt_box,
               bool gt_is_crowd);

// Exact mask IoU from the runs alone (no box shortcut, no size check).
double rle_iou_exact(const RunLengthMask& dt, const RunLengthMask& gt, bool gt_is_crowd);

}  // namespace dtrain::vision
