// Box arithmetic on [N, 4] tensors in (x1, y1, x2, y2) form, with
// torchvision's conventions: a box's width is x2 - x1 (no "+ 1"), so boxes
// live in continuous coordinates.
#pragma once

#include <ATen/ATen.h>

#include <cstdint>

namespace dtrain::vision::ops {

// [N] areas (x2 - x1) * (y2 - y1). Degenerate boxes give 0 or negative areas,
// as in torchvision; nothing is clamped.
at::Tensor box_area(const at::Tensor& boxes);

// [N, M] pairwise intersection over union of boxes1 [N, 4] and boxes2 [M, 4].
// Where the union is 0 (two zero-area boxes) the IoU is 0, not NaN; this is the
// one place we differ from torchvision, which divides 0 by 0 there.
at::Tensor box_iou(const at::Tensor& boxes1, const at::Tensor& boxes2);

// Clamps x to [0, width] and y to [0, height]; boxes is [..., 4].
at::Tensor clip_boxes_to_image(const at::Tensor& boxes, int64_t height, int64_t width);

// int64 indices of the boxes whose width and height are both >= min_size.
at::Tensor remove_small_boxes(const at::Tensor& boxes, double min_size);

}  // namespace dtrain::vision::ops
