// Pastes the mask head's fixed-size per-box masks into full-image masks
// with torchvision's rules (roi_heads.paste_masks_in_image, CPU path): the
// mask is padded by a border of zeros, its box grown by the same proportion,
// the box truncated to integers, and the mask resized bilinearly onto the
// box's pixels (both ends inclusive, the legacy "+ 1").
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <utility>

namespace dtrain::vision::ops {

// boxes [N, 4] grown about their centres: half-widths and half-heights times scale.
at::Tensor expand_boxes(const at::Tensor& boxes, double scale);

// masks [N, 1, M, M] padded by padding zeros on every side, and the scale
// (M + 2 * padding) / M by which their boxes must grow to match.
std::pair<at::Tensor, double> expand_masks(const at::Tensor& masks, int64_t padding);

// masks [N, 1, M, M] (probabilities, floating point), boxes [N, 4] in image
// pixels -> [N, 1, image_height, image_width] of the masks' dtype, zero
// outside each box. For each (expanded, int64-truncated) box, the mask is
// resized to (y2 - y1 + 1) x (x2 - x1 + 1) (at least 1 x 1) with bilinear
// interpolation, align_corners = false, and the part inside the image is
// copied to rows y1..y2 and columns x1..x2. A box that misses the image
// entirely pastes nothing (torchvision's Python slicing would fail or wrap there).
at::Tensor paste_masks_in_image(const at::Tensor& masks, const at::Tensor& boxes, int64_t image_height,
                                int64_t image_width, int64_t padding = 1);

}  // namespace dtrain::vision::ops
