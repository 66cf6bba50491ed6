#include "vision/ops/paste_masks.h"

#include <algorithm>
#include <vector>

namespace dtrain::vision::ops {

at::Tensor expand_boxes(const at::Tensor& boxes, double scale) {
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4, "expand_boxes: boxes must be [N, 4], got ", boxes.sizes());
  const at::Tensor x1 = boxes.select(1, 0);
  const at::Tensor y1 = boxes.select(1, 1);
  const at::Tensor x2 = boxes.select(1, 2);
  const at::Tensor y2 = boxes.select(1, 3);
  // Same operation order as torchvision so float results agree bit for bit.
  const at::Tensor w_half = (x2 - x1) * 0.5 * scale;
  const at::Tensor h_half = (y2 - y1) * 0.5 * scale;
  const at::Tensor x_c = (x2 + x1) * 0.5;
  const at::Tensor y_c = (y2 + y1) * 0.5;
  return at::stack({x_c - w_half, y_c - h_half, x_c + w_half, y_c + h_half}, 1);
}

std::pair<at::Tensor, double> expand_masks(const at::Tensor& masks, int64_t padding) {
  TORCH_CHECK(masks.dim() == 4 && masks.size(1) == 1 && masks.size(2) == masks.size(3) && masks.size(3) > 0,
              "expand_masks: masks must be [N, 1, M, M] with M > 0, got ", masks.sizes());
  TORCH_CHECK(padding >= 0, "expand_masks: padding must be >= 0, got ", padding);
  const int64_t m = masks.size(-1);
  const double scale = static_cast<double>(m + 2 * padding) / static_cast<double>(m);
  return {at::constant_pad_nd(masks, {padding, padding, padding, padding}, 0), scale};
}

namespace {

// One mask [M', M'] into a zero [image_height, image_width] canvas; box is
// four int64 values.
at::Tensor paste_one(const at::Tensor& mask, const int64_t* box, int64_t image_height, int64_t image_width) {
  const int64_t w = std::max<int64_t>(box[2] - box[0] + 1, 1);
  const int64_t h = std::max<int64_t>(box[3] - box[1] + 1, 1);
  const at::Tensor resized =
      at::upsample_bilinear2d(mask.expand({1, 1, -1, -1}), {h, w}, /*align_corners=*/false, c10::nullopt, c10::nullopt)
          .select(0, 0)
          .select(0, 0);
  at::Tensor canvas = at::zeros({image_height, image_width}, mask.options());
  const int64_t x0 = std::max<int64_t>(box[0], 0);
  const int64_t x1 = std::min<int64_t>(box[2] + 1, image_width);
  const int64_t y0 = std::max<int64_t>(box[1], 0);
  const int64_t y1 = std::min<int64_t>(box[3] + 1, image_height);
  if (x0 >= x1 || y0 >= y1) return canvas;
  // Here x1 <= box[2] + 1 <= box[0] + w (likewise for y), so the source
  // window lies inside the resized mask.
  canvas.slice(0, y0, y1).slice(1, x0, x1).copy_(
      resized.slice(0, y0 - box[1], y1 - box[1]).slice(1, x0 - box[0], x1 - box[0]));
  return canvas;
}

}  // namespace

at::Tensor paste_masks_in_image(const at::Tensor& masks, const at::Tensor& boxes, int64_t image_height,
                                int64_t image_width, int64_t padding) {
  TORCH_CHECK(masks.dim() == 4 && masks.size(1) == 1, "paste_masks_in_image: masks must be [N, 1, M, M], got ",
              masks.sizes());
  TORCH_CHECK(at::isFloatingType(masks.scalar_type()), "paste_masks_in_image: masks must be floating point, got ",
              masks.scalar_type());
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4 && boxes.size(0) == masks.size(0),
              "paste_masks_in_image: boxes must be [", masks.size(0), ", 4], got ", boxes.sizes());
  TORCH_CHECK(image_height >= 0 && image_width >= 0, "paste_masks_in_image: image size ", image_height, "x",
              image_width, " is negative");
  const int64_t n = masks.size(0);
  if (n == 0) return at::empty({0, 1, image_height, image_width}, masks.options());

  const auto [padded, scale] = expand_masks(masks, padding);
  // Truncation toward zero, as torchvision's .to(torch.int64).
  const at::Tensor int_boxes = expand_boxes(boxes, scale).to(at::kLong).contiguous().cpu();
  const int64_t* box_data = int_boxes.data_ptr<int64_t>();
  std::vector<at::Tensor> pasted;
  pasted.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    pasted.push_back(paste_one(padded[i][0], box_data + 4 * i, image_height, image_width));
  }
  return at::stack(pasted, 0).unsqueeze(1);
}

}  // namespace dtrain::vision::ops
