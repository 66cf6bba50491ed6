#pragma once

// The second stage of Mask R-CNN with torchvision's RoIHeads rules. In
// training: ground-truth boxes join the proposals, proposals are matched to
// ground truth (IoU >= fg: the object's class; < bg: background) and a
// balanced sample is pooled (7x7), classified and regressed; the positive
// ones are pooled again (14x14) for the mask branch. In inference: softmax
// scores and per-class decoded boxes, clipped; scores above a threshold,
// tiny boxes dropped, per-class NMS, the best detections_per_image kept,
// and a mask probability map for each at its predicted class.
#include <torch/torch.h>

#include <map>
#include <string>

#include "vision/modeling/box_head.h"
#include "vision/modeling/mask_head.h"
#include "vision/modeling/mask_rcnn_options.h"
#include "vision/ops/balanced_sampler.h"
#include "vision/ops/box_coder.h"
#include "vision/ops/matcher.h"
#include "vision/ops/multiscale_roi_align.h"
#include "vision/structures/instances.h"

namespace dtrain::vision::modeling {

struct RoiHeadsOutput {
  std::vector<Detections> detections;        // inference: per image, in resized-image pixels, masks [N, 1, 28, 28]
  std::map<std::string, at::Tensor> losses;  // training: loss_classifier, loss_box_reg, loss_mask
  int64_t sampled_proposals = 0;             // training: rows the classifier and box losses average over
  int64_t positive_proposals = 0;            // training: masks the mask loss averages over
};

// What the training sample of proposals was, for tests that compare the
// heads with another implementation on the same sample.
struct RoiTrainingSample {
  std::vector<at::Tensor> proposals;     // per image, the sampled proposals (positives and negatives)
  std::vector<at::Tensor> labels;        // per image, class of each (0 background)
  std::vector<at::Tensor> matched_idxs;  // per image, index into the image's ground truth
};

class RoiHeadsImpl : public torch::nn::Module {
 public:
  RoiHeadsImpl(const RoiHeadsOptions& options, int64_t in_channels);

  // features: the pyramid levels (the first four are pooled from);
  // proposals per image [P_i, 4] in resized-image pixels; targets needed in
  // training, where the sample is drawn from generator.
  RoiHeadsOutput forward(const std::vector<at::Tensor>& features, const std::vector<at::Tensor>& proposals,
                         const std::vector<ImageSize>& image_sizes, const std::vector<DetectionTargets>* targets,
                         const ops::ImageGenerators& generators, RoiTrainingSample* sample_out = nullptr);

 private:
  RoiTrainingSample sample_proposals(const std::vector<at::Tensor>& proposals,
                                     const std::vector<DetectionTargets>& targets,
                                     const ops::ImageGenerators& generators) const;
  std::vector<Detections> postprocess(const at::Tensor& class_logits, const at::Tensor& box_regression,
                                      const std::vector<at::Tensor>& proposals,
                                      const std::vector<ImageSize>& image_sizes) const;

  RoiHeadsOptions options_;
  ops::Matcher matcher_;
  ops::BalancedPositiveNegativeSampler sampler_;
  ops::BoxCoder box_coder_;
  ops::MultiScaleRoIAlign box_pooler_;
  ops::MultiScaleRoIAlign mask_pooler_;
  BoxHead box_head_{nullptr};
  BoxPredictor box_predictor_{nullptr};
  MaskHead mask_head_{nullptr};
  MaskPredictor mask_predictor_{nullptr};
};
TORCH_MODULE(RoiHeads);

}  // namespace dtrain::vision::modeling
