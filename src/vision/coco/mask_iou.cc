#include "vision/coco/mask_iou.h"

#include <algorithm>
#include <cmath>

#include "vision/coco/run_pair_walker.h"

namespace dtrain::vision {

double box_iou(const BoundingBox& dt, const BoundingBox& gt, bool gt_is_crowd) {
  // Evaluated in the COCO API's order so the doubles come out identical.
  const double dt_area = dt.width * dt.height;
  const double gt_area = gt.width * gt.height;
  const double overlap_w = std::fmin(dt.width + dt.x, gt.width + gt.x) - std::fmax(dt.x, gt.x);
  if (overlap_w <= 0) return 0;
  const double overlap_h = std::fmin(dt.height + dt.y, gt.height + gt.y) - std::fmax(dt.y, gt.y);
  if (overlap_h <= 0) return 0;
  const double intersection = overlap_w * overlap_h;
  const double union_area = gt_is_crowd ? dt_area : dt_area + gt_area - intersection;
  return intersection / union_area;
}

double rle_iou_exact(const RunLengthMask& dt, const RunLengthMask& gt, bool gt_is_crowd) {
  RunPairWalker walker(dt.counts, gt.counts);
  uint32_t intersection = 0, union_area = 0, length;
  bool in_a, in_b;
  while (walker.next(&length, &in_a, &in_b)) {
    if (in_a || in_b) union_area += length;
    if (in_a && in_b) intersection += length;
  }
  if (intersection == 0) {
    union_area = 1;
  } else if (gt_is_crowd) {
    union_area = rle_area(dt);
  }
  return static_cast<double>(intersection) / static_cast<double>(union_area);
}

double rle_iou(const RunLengthMask& dt, const BoundingBox& dt_box, const RunLengthMask& gt, const BoundingBox& gt_box,
               bool gt_is_crowd) {
  const double box_overlap = box_iou(dt_box, gt_box, gt_is_crowd);
  if (!(box_overlap > 0)) return box_overlap;
  if (dt.height != gt.height || dt.width != gt.width) return -1;
  return rle_iou_exact(dt, gt, gt_is_crowd);
}

double rle_iou(const RunLengthMask& dt, const RunLengthMask& gt, bool gt_is_crowd) {
  return rle_iou(dt, rle_to_bbox(dt), gt, rle_to_bbox(gt), gt_is_crowd);
}

}  // namespace dtrain::vision
