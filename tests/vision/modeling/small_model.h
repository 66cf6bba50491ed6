#pragma once

// A Mask R-CNN small enough for unit tests on a CPU (ResNet-18, 32 FPN channels, images of
// about 100 pixels) and scenes with known objects for it.
#include <utility>

#include "vision/modeling/mask_rcnn.h"

namespace dtrain::vision::modeling {

inline MaskRcnnOptions small_options() {
  MaskRcnnOptions o;
  o.backbone.depth = 18;
  o.backbone.fpn_out_channels = 32;
  o.rpn.anchor_sizes = {{8}, {16}, {32}, {64}, {128}};
  o.rpn.pre_nms_top_n_train = o.rpn.pre_nms_top_n_test = 200;
  o.rpn.post_nms_top_n_train = o.rpn.post_nms_top_n_test = 100;
  o.rpn.batch_size_per_image = 64;
  o.roi_heads.num_classes = 4;
  o.roi_heads.batch_size_per_image = 64;
  o.roi_heads.box_fc_dim = 64;
  o.roi_heads.mask_conv_dim = 16;
  o.roi_heads.mask_num_conv = 2;
  o.roi_heads.score_thresh = 0.0;
  o.transform.min_size_train = {96};
  o.transform.min_size_test = 96;
  o.transform.max_size_train = o.transform.max_size_test = 128;
  return o;
}

// An image with one bright square and its target.
inline std::pair<at::Tensor, DetectionTargets> square_scene(int64_t h, int64_t w, int64_t x1, int64_t y1,
                                                            int64_t size) {
  at::Tensor image = at::full({3, h, w}, 0.2);
  image.narrow(1, y1, size).narrow(2, x1, size).fill_(0.9);
  at::Tensor mask = at::zeros({1, h, w}, at::kByte);
  mask.narrow(1, y1, size).narrow(2, x1, size).fill_(1);
  DetectionTargets target{torch::tensor({{float(x1), float(y1), float(x1 + size), float(y1 + size)}}),
                          at::tensor({int64_t{2}}), mask};
  return {image, target};
}

inline DetectionTargets no_objects(int64_t h, int64_t w) {
  return {at::zeros({0, 4}), at::zeros({0}, at::kLong), at::zeros({0, h, w}, at::kByte)};
}

}  // namespace dtrain::vision::modeling
