#pragma once

// Mask R-CNN (He et al.) as torchvision's maskrcnn_resnet50_fpn builds it:
// image transform -> ResNet + FPN backbone -> region proposal network ->
// RoI heads (boxes, classes, masks) -> detections mapped back to each
// image's size. State names equal torchvision 0.13+'s, so its state dicts
// load by name (see model_weights.h).
#include <torch/torch.h>

#include <map>
#include <optional>
#include <string>

#include "vision/modeling/feature_pyramid.h"
#include "vision/modeling/image_transform.h"
#include "vision/modeling/mask_rcnn_options.h"
#include "vision/modeling/region_proposal_network.h"
#include "vision/modeling/resnet.h"
#include "vision/modeling/roi_heads.h"
#include "vision/structures/instances.h"

namespace dtrain::vision::modeling {

// backbone.body (ResNet) and backbone.fpn.
class BackboneImpl : public torch::nn::Module {
 public:
  explicit BackboneImpl(const BackboneOptions& options);
  std::vector<at::Tensor> forward(const at::Tensor& images);  // {P2, P3, P4, P5, P6}
  int64_t out_channels() const { return fpn_->out_channels(); }

 private:
  ResNet body_{nullptr};
  FeaturePyramid fpn_{nullptr};
};
TORCH_MODULE(Backbone);

using LossDict = std::map<std::string, at::Tensor>;
// How many samples each loss of a LossDict is the mean over in this batch:
// sampled anchors (loss_objectness, loss_rpn_box_reg), sampled proposals
// (loss_classifier, loss_box_reg), positive proposals (loss_mask). A
// data-parallel trainer rescales each loss by local / global count so that
// R ranks' averaged gradients equal those of one rank with the whole batch.
using LossCounts = std::map<std::string, int64_t>;

class MaskRcnnImpl : public torch::nn::Module {
 public:
  explicit MaskRcnnImpl(MaskRcnnOptions options);

  // Training step's losses: loss_objectness, loss_rpn_box_reg,
  // loss_classifier, loss_box_reg (and loss_mask with the mask head).
  // images [3, H, W] in 0..1 (sizes may differ); one target per image in the
  // image's pixels. Random choices (training size, anchor and proposal
  // samples) come from generator, by default LibTorch's global one — the one
  // torch.manual_seed seeds, drawn in the same order as torchvision.
  // Throws std::invalid_argument naming the image for malformed targets. Targets may be on
  // the CPU with the images on a GPU: they are checked there and moved to the images' device.
  LossDict losses(const std::vector<at::Tensor>& images, std::vector<DetectionTargets> targets,
                  at::Generator generator = {});

  // The same losses for a batch the data pipeline has already normalised,
  // resized and padded (vision/data's loader): targets are in the resized
  // images' pixels, image_sizes say where each image ends. With per-image
  // generators an image's samples do not depend on its batch; `counts`, when
  // given, receives what each loss averages over. Targets may be on the CPU, as for losses().
  LossDict batch_losses(ImageBatch batch, std::vector<DetectionTargets> targets,
                        const ops::ImageGenerators& generators = {}, LossCounts* counts = nullptr);

  // Detections per image in the image's own pixels; call in eval() mode.
  std::vector<Detections> detect(const std::vector<at::Tensor>& images);

  // The model computes in its parameters' floating type (float32 unless
  // moved with to(at::kDouble)); images and target boxes are converted to it.
  at::ScalarType compute_type();

  const MaskRcnnOptions& options() const { return options_; }
  Backbone backbone() const { return backbone_; }
  RegionProposalNetwork rpn() const { return rpn_; }
  RoiHeads roi_heads() const { return roi_heads_; }
  const ImageTransform& transform() const { return transform_; }

 private:
  struct NetworkOutputs {
    RpnOutput proposals;
    RoiHeadsOutput heads;
  };
  NetworkOutputs run_networks(const ImageBatch& batch, const std::vector<DetectionTargets>* targets,
                              const ops::ImageGenerators& generators);
  void use_channels_last();
  // losses()' and batch_losses()' checks, type conversion and move to the device (and for
  // losses() the image transform); throw std::invalid_argument for malformed targets.
  ImageBatch prepare_training_inputs(const std::vector<at::Tensor>& images, std::vector<DetectionTargets>& targets,
                                     at::Generator& generator);
  void prepare_batch_inputs(ImageBatch& batch, std::vector<DetectionTargets>& targets);
  LossDict forward_losses(const ImageBatch& batch, const std::vector<DetectionTargets>& targets,
                          const ops::ImageGenerators& generators, LossCounts* counts);

  MaskRcnnOptions options_;
  ImageTransform transform_;
  Backbone backbone_{nullptr};
  RegionProposalNetwork rpn_{nullptr};
  RoiHeads roi_heads_{nullptr};
};
TORCH_MODULE(MaskRcnn);

// Checks one image's training targets against the image and the class
// count; throws std::invalid_argument naming image `index` and what is wrong.
void validate_targets(const DetectionTargets& target, ImageSize image_size, size_t index, int64_t num_classes,
                      bool need_masks);

}  // namespace dtrain::vision::modeling
