#pragma once

// The two losses of the RoI heads, with torchvision's definitions.
#include <ATen/ATen.h>

#include <vector>

namespace dtrain::vision::modeling {

struct FastRcnnLosses {
  at::Tensor classifier;  // cross entropy over all sampled proposals
  at::Tensor box_reg;     // smooth L1 (beta 1/9) of the true class's deltas on positives, / #sampled
};

// class_logits [R, K], box_regression [R, 4K]; labels and regression_targets
// one tensor per image, concatenated in the same order as the rows.
FastRcnnLosses fast_rcnn_loss(const at::Tensor& class_logits, const at::Tensor& box_regression,
                              const std::vector<at::Tensor>& labels, const std::vector<at::Tensor>& regression_targets);

// Binary cross entropy between each positive proposal's logit map of its
// ground-truth class and the ground-truth mask cropped to the proposal by
// RoIAlign (M x M, unaligned, adaptive sampling). Zero (with gradient) when
// the batch has no positive proposal.
//  mask_logits [P, K, M, M]; per image: proposals [P_i, 4], gt_masks
//  [G_i, H, W], gt_labels [G_i], matched_idxs [P_i] into the image's ground truth.
at::Tensor mask_rcnn_loss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                          const std::vector<at::Tensor>& gt_masks, const std::vector<at::Tensor>& gt_labels,
                          const std::vector<at::Tensor>& matched_idxs);

}  // namespace dtrain::vision::modeling
