#include "vision/ops/box_ops.h"

namespace dtrain::vision::ops {
namespace {

void check_boxes(const at::Tensor& boxes, const char* name) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, name,
              " must be a [N, 4] tensor of (x1, y1, x2, y2) boxes, got shape ", boxes.sizes());
}

}  // namespace

at::Tensor box_area(const at::Tensor& boxes) {
  check_boxes(boxes, "box_area: boxes");
  return (boxes.select(1, 2) - boxes.select(1, 0)) * (boxes.select(1, 3) - boxes.select(1, 1));
}

at::Tensor box_iou(const at::Tensor& boxes1, const at::Tensor& boxes2) {
  check_boxes(boxes1, "box_iou: boxes1");
  check_boxes(boxes2, "box_iou: boxes2");
  const at::Tensor area1 = box_area(boxes1);
  const at::Tensor area2 = box_area(boxes2);
  // [N, 1, 2] against [M, 2] broadcasts to [N, M, 2].
  const at::Tensor top_left = at::max(boxes1.slice(1, 0, 2).unsqueeze(1), boxes2.slice(1, 0, 2));
  const at::Tensor bottom_right = at::min(boxes1.slice(1, 2, 4).unsqueeze(1), boxes2.slice(1, 2, 4));
  const at::Tensor wh = (bottom_right - top_left).clamp_min(0);
  const at::Tensor inter = wh.select(2, 0) * wh.select(2, 1);
  const at::Tensor uni = area1.unsqueeze(1) + area2 - inter;
  // Divide only where the union is positive so that 0 / 0 never appears.
  const at::Tensor positive = uni > 0;
  return at::where(positive, inter / at::where(positive, uni, at::ones_like(uni)), at::zeros_like(inter));
}

at::Tensor clip_boxes_to_image(const at::Tensor& boxes, int64_t height, int64_t width) {
  TORCH_CHECK(boxes.dim() >= 1 && boxes.size(-1) == 4, "clip_boxes_to_image: boxes must be [..., 4], got shape ",
              boxes.sizes());
  const at::Tensor xs = boxes.slice(-1, 0, 4, 2).clamp(0, static_cast<double>(width));
  const at::Tensor ys = boxes.slice(-1, 1, 4, 2).clamp(0, static_cast<double>(height));
  // Interleave back to (x1, y1, x2, y2).
  return at::stack({xs, ys}, boxes.dim()).reshape(boxes.sizes());
}

at::Tensor remove_small_boxes(const at::Tensor& boxes, double min_size) {
  check_boxes(boxes, "remove_small_boxes: boxes");
  const at::Tensor ws = boxes.select(1, 2) - boxes.select(1, 0);
  const at::Tensor hs = boxes.select(1, 3) - boxes.select(1, 1);
  const at::Tensor keep = at::logical_and(ws >= min_size, hs >= min_size);
  return at::nonzero(keep).view(-1);
}

}  // namespace dtrain::vision::ops
