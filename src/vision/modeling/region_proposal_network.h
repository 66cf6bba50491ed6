#pragma once

// The region proposal network of Faster/Mask R-CNN with torchvision's rules:
// a shared 3x3 conv head predicts, per anchor, an objectness logit and box
// deltas at every pyramid level; proposals are the decoded anchors, the top
// pre_nms_top_n per level by objectness, clipped, with tiny boxes dropped,
// NMS'd per level and cut to post_nms_top_n per image. In training it also
// returns the objectness (binary cross entropy) and box (smooth L1, beta
// 1/9) losses over a balanced sample of anchors.
#include <torch/torch.h>

#include <optional>

#include "vision/modeling/mask_rcnn_options.h"
#include "vision/ops/anchor_generator.h"
#include "vision/ops/balanced_sampler.h"
#include "vision/ops/box_coder.h"
#include "vision/ops/matcher.h"
#include "vision/structures/instances.h"

namespace dtrain::vision::modeling {

// State names as torchvision 0.13+: conv.0.0, cls_logits, bbox_pred.
class RpnHeadImpl : public torch::nn::Module {
 public:
  RpnHeadImpl(int64_t in_channels, int64_t anchors_per_location);
  // Per level: objectness [N, A, H, W] and deltas [N, 4A, H, W].
  std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> forward(const std::vector<at::Tensor>& features);

 private:
  torch::nn::Conv2d conv_{nullptr}, cls_logits_{nullptr}, bbox_pred_{nullptr};
};
TORCH_MODULE(RpnHead);

struct RpnOutput {
  int64_t sampled_anchors = 0;        // training: how many anchors the two losses average over
  std::vector<at::Tensor> proposals;  // per image [P_i, 4], detached
  std::vector<at::Tensor> scores;     // per image [P_i] objectness probabilities
  at::Tensor loss_objectness;         // training only
  at::Tensor loss_rpn_box_reg;        // training only
};

class RegionProposalNetworkImpl : public torch::nn::Module {
 public:
  RegionProposalNetworkImpl(const RpnOptions& options, int64_t in_channels);

  // features: the pyramid levels (all of them); image_sizes: each image's
  // size before padding; padded_size: the batch tensor's (height, width).
  // Training needs targets (boxes) and draws the anchor sample from generator.
  RpnOutput forward(const std::vector<at::Tensor>& features, const std::vector<ImageSize>& image_sizes,
                    ImageSize padded_size, const std::vector<DetectionTargets>* targets,
                    const ops::ImageGenerators& generators);

 private:
  std::vector<at::Tensor> select_proposals(const at::Tensor& proposals, const at::Tensor& objectness,
                                           const std::vector<ImageSize>& image_sizes,
                                           const std::vector<int64_t>& anchors_per_level,
                                           std::vector<at::Tensor>* scores) const;

  RpnOptions options_;
  ops::AnchorGenerator anchor_generator_;
  ops::BoxCoder box_coder_{{1.0, 1.0, 1.0, 1.0}};
  ops::Matcher matcher_;
  ops::BalancedPositiveNegativeSampler sampler_;
  RpnHead head_{nullptr};
};
TORCH_MODULE(RegionProposalNetwork);

// Anchors per location for these options (sizes x ratios at level 0).
int64_t anchors_per_location(const RpnOptions& options);

}  // namespace dtrain::vision::modeling
