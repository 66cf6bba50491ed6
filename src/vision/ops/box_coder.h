// The box coder of Faster/Mask R-CNN: encodes a box relative to a reference
// box as (dx, dy, dw, dh) and decodes such deltas back, exactly as
// torchvision's detection BoxCoder does (widths x2 - x1, centres x1 + w / 2).
#pragma once

#include <ATen/ATen.h>

#include <array>
#include <cmath>

namespace dtrain::vision::ops {

class BoxCoder {
 public:
  // The default clip keeps exp(dw) from turning a 16-pixel anchor into a box
  // wider than 1000 pixels.
  static inline const double kDefaultXformClip = std::log(1000.0 / 16.0);

  explicit BoxCoder(std::array<double, 4> weights, double bbox_xform_clip = kDefaultXformClip);

  // targets [N, 4] that turn each proposal into its matched box:
  // dx = wx * (gx - px) / pw, dw = ww * log(gw / pw), and likewise for y, h.
  at::Tensor encode(const at::Tensor& matched_boxes, const at::Tensor& proposals) const;

  // rel_codes [N, 4 * K] applied to boxes [N, 4] gives [N, 4 * K] boxes
  // (torchvision's decode_single). dw and dh are clamped at bbox_xform_clip
  // before exponentiation.
  at::Tensor decode(const at::Tensor& rel_codes, const at::Tensor& boxes) const;

  const std::array<double, 4>& weights() const { return weights_; }
  double bbox_xform_clip() const { return bbox_xform_clip_; }

 private:
  std::array<double, 4> weights_;
  double bbox_xform_clip_;
};

}  // namespace dtrain::vision::ops
