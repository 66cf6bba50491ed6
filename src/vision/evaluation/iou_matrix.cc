#include "vision/evaluation/iou_matrix.h"

#include "vision/coco/mask_iou.h"

namespace dtrain::vision {

std::vector<double> box_iou_matrix(std::span<const BoundingBox> dts, std::span<const BoundingBox> gts,
                                   std::span<const uint8_t> gt_is_crowd) {
  const size_t D = dts.size(), G = gts.size();
  std::vector<double> out;
  if (D == 0 || G == 0) return out;
  out.resize(D * G);
  for (size_t d = 0; d < D; ++d) {
    for (size_t g = 0; g < G; ++g) out[d * G + g] = box_iou(dts[d], gts[g], gt_is_crowd[g] != 0);
  }
  return out;
}

std::vector<double> mask_iou_matrix(std::span<const RunLengthMask* const> dts,
                                    std::span<const RunLengthMask* const> gts, std::span<const uint8_t> gt_is_crowd) {
  std::vector<BoundingBox> dt_boxes(dts.size()), gt_boxes(gts.size());
  if (dts.empty() || gts.empty()) return {};
  for (size_t d = 0; d < dts.size(); ++d) dt_boxes[d] = rle_to_bbox(*dts[d]);
  for (size_t g = 0; g < gts.size(); ++g) gt_boxes[g] = rle_to_bbox(*gts[g]);
  return mask_iou_matrix(dts, dt_boxes, gts, gt_boxes, gt_is_crowd);
}

std::vector<double> mask_iou_matrix(std::span<const RunLengthMask* const> dts, std::span<const BoundingBox> dt_boxes,
                                    std::span<const RunLengthMask* const> gts, std::span<const BoundingBox> gt_boxes,
                                    std::span<const uint8_t> gt_is_crowd) {
  const size_t D = dts.size(), G = gts.size();
  std::vector<double> out;
  if (D == 0 || G == 0) return out;
  out.resize(D * G);
  for (size_t d = 0; d < D; ++d) {
    for (size_t g = 0; g < G; ++g) {
      out[d * G + g] = rle_iou(*dts[d], dt_boxes[d], *gts[g], gt_boxes[g], gt_is_crowd[g] != 0);
    }
  }
  return out;
}

}  // namespace dtrain::vision
