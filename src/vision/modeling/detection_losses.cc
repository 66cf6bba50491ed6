#include "vision/modeling/detection_losses.h"

#include "vision/ops/roi_align.h"

namespace dtrain::vision::modeling {

FastRcnnLosses fast_rcnn_loss(const at::Tensor& class_logits, const at::Tensor& box_regression,
                              const std::vector<at::Tensor>& labels,
                              const std::vector<at::Tensor>& regression_targets) {
  const at::Tensor all_labels = at::cat(labels, 0);
  const at::Tensor all_targets = at::cat(regression_targets, 0);
  FastRcnnLosses losses;
  losses.classifier = at::cross_entropy_loss(class_logits, all_labels);
  const at::Tensor positive = at::where(all_labels > 0)[0];
  const at::Tensor positive_labels = all_labels.index_select(0, positive);
  const int64_t rows = class_logits.size(0);
  const at::Tensor deltas = box_regression.reshape({rows, box_regression.size(-1) / 4, 4});
  losses.box_reg = at::smooth_l1_loss(deltas.index({positive, positive_labels}), all_targets.index_select(0, positive),
                                      at::Reduction::Sum, 1.0 / 9) /
                   static_cast<double>(all_labels.numel());
  return losses;
}

at::Tensor mask_rcnn_loss(const at::Tensor& mask_logits, const std::vector<at::Tensor>& proposals,
                          const std::vector<at::Tensor>& gt_masks, const std::vector<at::Tensor>& gt_labels,
                          const std::vector<at::Tensor>& matched_idxs) {
  const int64_t m = mask_logits.size(-1);
  std::vector<at::Tensor> labels, mask_targets;
  for (size_t i = 0; i < proposals.size(); ++i) {
    labels.push_back(gt_labels[i].index_select(0, matched_idxs[i]));
    // Crop and resample each matched ground-truth mask to the proposal.
    const at::Tensor rois = at::cat({matched_idxs[i].to(proposals[i].scalar_type()).unsqueeze(1), proposals[i]}, 1);
    const at::Tensor masks = gt_masks[i].unsqueeze(1).to(rois.scalar_type());
    if (rois.size(0) == 0) {
      mask_targets.push_back(at::zeros({0, m, m}, rois.options()));
      continue;
    }
    mask_targets.push_back(
        ops::roi_align_forward(masks, rois, 1.0, m, m, /*sampling_ratio=*/0, /*aligned=*/false).select(1, 0));
  }
  const at::Tensor all_labels = at::cat(labels, 0);
  const at::Tensor all_targets = at::cat(mask_targets, 0);
  if (all_targets.numel() == 0) return mask_logits.sum() * 0;
  const at::Tensor rows = at::arange(all_labels.size(0), all_labels.options());
  return at::binary_cross_entropy_with_logits(mask_logits.index({rows, all_labels}), all_targets);
}

}  // namespace dtrain::vision::modeling
