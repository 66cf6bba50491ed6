#include "vision/ops/box_coder.h"

namespace dtrain::vision::ops {

BoxCoder::BoxCoder(std::array<double, 4> weights, double bbox_xform_clip)
    : weights_(weights), bbox_xform_clip_(bbox_xform_clip) {}

at::Tensor BoxCoder::encode(const at::Tensor& matched_boxes, const at::Tensor& proposals) const {
  TORCH_CHECK(matched_boxes.dim() == 2 && matched_boxes.size(1) == 4,
              "BoxCoder::encode: matched_boxes must be [N, 4], got ", matched_boxes.sizes());
  TORCH_CHECK(proposals.sizes() == matched_boxes.sizes(),
              "BoxCoder::encode: proposals must have the shape of matched_boxes ", matched_boxes.sizes(), ", got ",
              proposals.sizes());
  const auto [wx, wy, ww, wh] = weights_;
  const at::Tensor p_w = proposals.select(1, 2) - proposals.select(1, 0);
  const at::Tensor p_h = proposals.select(1, 3) - proposals.select(1, 1);
  const at::Tensor p_cx = proposals.select(1, 0) + 0.5 * p_w;
  const at::Tensor p_cy = proposals.select(1, 1) + 0.5 * p_h;
  const at::Tensor g_w = matched_boxes.select(1, 2) - matched_boxes.select(1, 0);
  const at::Tensor g_h = matched_boxes.select(1, 3) - matched_boxes.select(1, 1);
  const at::Tensor g_cx = matched_boxes.select(1, 0) + 0.5 * g_w;
  const at::Tensor g_cy = matched_boxes.select(1, 1) + 0.5 * g_h;
  const at::Tensor dx = wx * (g_cx - p_cx) / p_w;
  const at::Tensor dy = wy * (g_cy - p_cy) / p_h;
  const at::Tensor dw = ww * at::log(g_w / p_w);
  const at::Tensor dh = wh * at::log(g_h / p_h);
  return at::stack({dx, dy, dw, dh}, 1);
}

at::Tensor BoxCoder::decode(const at::Tensor& rel_codes, const at::Tensor& boxes) const {
  TORCH_CHECK(rel_codes.dim() == 2 && rel_codes.size(1) % 4 == 0,
              "BoxCoder::decode: rel_codes must be [N, 4 * K], got ", rel_codes.sizes());
  TORCH_CHECK(boxes.dim() == 2 && boxes.size(1) == 4 && boxes.size(0) == rel_codes.size(0),
              "BoxCoder::decode: boxes must be [", rel_codes.size(0), ", 4], got ", boxes.sizes());
  const auto [wx, wy, ww, wh] = weights_;
  const at::Tensor b = boxes.to(rel_codes.scalar_type());
  const at::Tensor widths = (b.select(1, 2) - b.select(1, 0)).unsqueeze(1);
  const at::Tensor heights = (b.select(1, 3) - b.select(1, 1)).unsqueeze(1);
  const at::Tensor ctr_x = b.select(1, 0).unsqueeze(1) + 0.5 * widths;
  const at::Tensor ctr_y = b.select(1, 1).unsqueeze(1) + 0.5 * heights;

  const at::Tensor dx = rel_codes.slice(1, 0, at::indexing::None, 4) / wx;
  const at::Tensor dy = rel_codes.slice(1, 1, at::indexing::None, 4) / wy;
  const at::Tensor dw = (rel_codes.slice(1, 2, at::indexing::None, 4) / ww).clamp_max(bbox_xform_clip_);
  const at::Tensor dh = (rel_codes.slice(1, 3, at::indexing::None, 4) / wh).clamp_max(bbox_xform_clip_);

  const at::Tensor pred_cx = dx * widths + ctr_x;
  const at::Tensor pred_cy = dy * heights + ctr_y;
  const at::Tensor half_w = 0.5 * (at::exp(dw) * widths);
  const at::Tensor half_h = 0.5 * (at::exp(dh) * heights);
  // [N, K, 4] then flattened to [N, 4 * K], box by box.
  return at::stack({pred_cx - half_w, pred_cy - half_h, pred_cx + half_w, pred_cy + half_h}, 2).flatten(1);
}

}  // namespace dtrain::vision::ops
