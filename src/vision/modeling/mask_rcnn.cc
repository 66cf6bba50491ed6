#include "vision/modeling/mask_rcnn.h"

#include "vision/modeling/autocast.h"

#include <ATen/record_function.h>

#include <stdexcept>
#include <string>

namespace dtrain::vision::modeling {
namespace {

std::string image_label(size_t index) { return "training target of image " + std::to_string(index) + ": "; }

// Validated where they came (the CPU, for the trainer: no GPU round trip per check), then moved
// where the images are; from pinned memory without blocking. Boxes in the model's type.
void move_targets(std::vector<DetectionTargets>& targets, const at::Device& device, at::ScalarType type) {
  for (DetectionTargets& target : targets) {
    target.boxes = target.boxes.to(device, type, /*non_blocking=*/true);
    target.labels = target.labels.to(device, /*non_blocking=*/true);
    if (target.masks.defined()) target.masks = target.masks.to(device, /*non_blocking=*/true);
  }
}

}  // namespace

BackboneImpl::BackboneImpl(const BackboneOptions& options) {
  body_ = register_module("body", ResNet(options.depth, options.frozen_batch_norm));
  body_->set_trainable_layers(options.trainable_layers);
  fpn_ = register_module("fpn", FeaturePyramid(body_->stage_channels(), options.fpn_out_channels));
}

std::vector<at::Tensor> BackboneImpl::forward(const at::Tensor& images) {
  return fpn_->forward(body_->forward(images));
}

MaskRcnnImpl::MaskRcnnImpl(MaskRcnnOptions options) : options_(std::move(options)), transform_(options_.transform) {
  backbone_ = register_module("backbone", Backbone(options_.backbone));
  rpn_ = register_module("rpn", RegionProposalNetwork(options_.rpn, backbone_->out_channels()));
  roi_heads_ = register_module("roi_heads", RoiHeads(options_.roi_heads, backbone_->out_channels()));
  if (options_.compute.channels_last) use_channels_last();
}

// The backbone's and the RPN head's convolution weights in NHWC; to(), copy_() and SGD's
// in-place updates keep the layout, and checkpoints are written contiguous (NCHW), so files
// do not depend on the setting. The mask head stays NCHW: RoIAlign hands it NCHW features,
// and LibTorch 1.13 cannot convolve an empty batch (no detections) with NHWC weights.
void MaskRcnnImpl::use_channels_last() {
  torch::NoGradGuard no_grad;
  for (const torch::nn::Module* part :
       {static_cast<torch::nn::Module*>(backbone_.get()), static_cast<torch::nn::Module*>(rpn_.get())}) {
    for (at::Tensor& parameter : part->parameters()) {
      if (parameter.dim() == 4) parameter.set_data(parameter.contiguous(at::MemoryFormat::ChannelsLast));
    }
  }
}

// The networks' forward pass over a batch: autocast when the options ask for it, images in
// the convolutions' layout. What the networks hand to geometry and losses is float32
// (full_precision in the heads), so only the networks' own arithmetic is 16-bit. Each network
// is a named range for LibTorch's profiler (torch.profiler's record_function; nearly free
// when no profiler runs), the names the benchmark gives torchvision's parts.
MaskRcnnImpl::NetworkOutputs MaskRcnnImpl::run_networks(const ImageBatch& batch,
                                                        const std::vector<DetectionTargets>* targets,
                                                        const ops::ImageGenerators& generators) {
  const AutocastRegion autocast(options_.compute.mixed_precision, batch.tensors.device());
  std::vector<at::Tensor> features;
  {
    RECORD_USER_SCOPE("mask_rcnn.backbone");
    const at::Tensor images =
        options_.compute.channels_last ? batch.tensors.contiguous(at::MemoryFormat::ChannelsLast) : batch.tensors;
    features = backbone_->forward(images);
  }
  const ImageSize padded{batch.tensors.size(2), batch.tensors.size(3)};
  RpnOutput proposals;
  {
    RECORD_USER_SCOPE("mask_rcnn.rpn");
    proposals = rpn_->forward(features, batch.image_sizes, padded, targets, generators);
  }
  RECORD_USER_SCOPE("mask_rcnn.roi_heads");
  RoiHeadsOutput heads = roi_heads_->forward(features, proposals.proposals, batch.image_sizes, targets, generators);
  return {std::move(proposals), std::move(heads)};
}

void validate_targets(const DetectionTargets& target, ImageSize image_size, size_t index, int64_t num_classes,
                      bool need_masks) {
  const std::string where = image_label(index);
  if (!target.boxes.defined() || target.boxes.dim() != 2 || target.boxes.size(1) != 4 ||
      !target.boxes.is_floating_point()) {
    throw std::invalid_argument(where + "boxes must be a floating point [K, 4] tensor");
  }
  const int64_t k = target.boxes.size(0);
  if (!target.labels.defined() || target.labels.dim() != 1 || target.labels.size(0) != k ||
      target.labels.scalar_type() != at::kLong) {
    throw std::invalid_argument(where + "labels must be an int64 [" + std::to_string(k) + "] tensor");
  }
  if (k > 0) {
    const at::Tensor finite = target.boxes.isfinite().all();
    if (!finite.item<bool>()) throw std::invalid_argument(where + "boxes contain NaN or infinity");
    const at::Tensor degenerate = (target.boxes.select(1, 2) <= target.boxes.select(1, 0))
                                      .logical_or(target.boxes.select(1, 3) <= target.boxes.select(1, 1));
    if (degenerate.any().item<bool>()) {
      const int64_t bad = at::where(degenerate)[0][0].item<int64_t>();
      const at::Tensor b = target.boxes[bad];
      throw std::invalid_argument(where + "box " + std::to_string(bad) + " (" + std::to_string(b[0].item<double>()) +
                                  ", " + std::to_string(b[1].item<double>()) + ", " +
                                  std::to_string(b[2].item<double>()) + ", " + std::to_string(b[3].item<double>()) +
                                  ") has no positive width and height");
    }
    const int64_t lo = target.labels.min().item<int64_t>(), hi = target.labels.max().item<int64_t>();
    if (lo < 1 || hi >= num_classes) {
      throw std::invalid_argument(where + "labels must be in 1.." + std::to_string(num_classes - 1) + ", got " +
                                  std::to_string(lo < 1 ? lo : hi));
    }
  }
  if (need_masks) {
    const auto& m = target.masks;
    if (!m.defined() || m.dim() != 3 || m.size(0) != k || m.size(1) != image_size[0] || m.size(2) != image_size[1]) {
      throw std::invalid_argument(where + "masks must be [" + std::to_string(k) + ", " + std::to_string(image_size[0]) +
                                  ", " + std::to_string(image_size[1]) + "] (one per box, at the image's size), got " +
                                  (m.defined() ? c10::str(m.sizes()) : std::string("none")));
    }
  }
}

LossDict MaskRcnnImpl::losses(const std::vector<at::Tensor>& images, std::vector<DetectionTargets> targets,
                              at::Generator generator) {
  TORCH_CHECK(is_training(), "MaskRcnn::losses needs train() mode");
  std::optional<ImageBatch> batch;
  {
    RECORD_USER_SCOPE("mask_rcnn.inputs");  // checks, targets to the device, the image transform
    batch = prepare_training_inputs(images, targets, generator);
  }
  return forward_losses(*batch, targets, generator, nullptr);
}

ImageBatch MaskRcnnImpl::prepare_training_inputs(const std::vector<at::Tensor>& images,
                                                 std::vector<DetectionTargets>& targets, at::Generator& generator) {
  if (!generator.defined()) generator = at::detail::getDefaultCPUGenerator();
  if (images.size() != targets.size()) {
    throw std::invalid_argument("Mask R-CNN training: " + std::to_string(images.size()) + " images but " +
                                std::to_string(targets.size()) + " targets");
  }
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].dim() != 3) throw std::invalid_argument("Mask R-CNN: images must be [3, H, W]");
    validate_targets(targets[i], {images[i].size(1), images[i].size(2)}, i, options_.roi_heads.num_classes,
                     options_.roi_heads.mask_on);
  }
  const at::ScalarType type = compute_type();
  std::vector<at::Tensor> typed;
  for (const at::Tensor& image : images) typed.push_back(image.to(type));
  if (!images.empty()) move_targets(targets, images.front().device(), type);
  return transform_.forward(typed, &targets, /*training=*/true, generator);
}

LossDict MaskRcnnImpl::batch_losses(ImageBatch batch, std::vector<DetectionTargets> targets,
                                    const ops::ImageGenerators& generators, LossCounts* counts) {
  TORCH_CHECK(is_training(), "MaskRcnn::batch_losses needs train() mode");
  {
    RECORD_USER_SCOPE("mask_rcnn.inputs");  // checks, targets to the device
    prepare_batch_inputs(batch, targets);
  }
  if (!generators.per_image() && !generators.for_image(0).defined()) {
    return forward_losses(batch, targets, at::detail::getDefaultCPUGenerator(), counts);
  }
  return forward_losses(batch, targets, generators, counts);
}

void MaskRcnnImpl::prepare_batch_inputs(ImageBatch& batch, std::vector<DetectionTargets>& targets) {
  if (batch.image_sizes.size() != targets.size() || batch.tensors.dim() != 4 ||
      batch.tensors.size(0) != static_cast<int64_t>(targets.size())) {
    throw std::invalid_argument("Mask R-CNN training: a batch of " + std::to_string(batch.image_sizes.size()) +
                                " images but " + std::to_string(targets.size()) + " targets");
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    validate_targets(targets[i], batch.image_sizes[i], i, options_.roi_heads.num_classes, options_.roi_heads.mask_on);
  }
  const at::ScalarType type = compute_type();
  batch.tensors = batch.tensors.to(type);
  move_targets(targets, batch.tensors.device(), type);
}

LossDict MaskRcnnImpl::forward_losses(const ImageBatch& batch, const std::vector<DetectionTargets>& targets,
                                      const ops::ImageGenerators& generators, LossCounts* counts) {
  auto [proposals, heads] = run_networks(batch, &targets, generators);
  LossDict losses = std::move(heads.losses);
  losses["loss_objectness"] = proposals.loss_objectness;
  losses["loss_rpn_box_reg"] = proposals.loss_rpn_box_reg;
  if (counts) {
    *counts = {{"loss_objectness", proposals.sampled_anchors},
               {"loss_rpn_box_reg", proposals.sampled_anchors},
               {"loss_classifier", heads.sampled_proposals},
               {"loss_box_reg", heads.sampled_proposals}};
    if (options_.roi_heads.mask_on) (*counts)["loss_mask"] = heads.positive_proposals;
  }
  return losses;
}

std::vector<Detections> MaskRcnnImpl::detect(const std::vector<at::Tensor>& images) {
  TORCH_CHECK(!is_training(), "MaskRcnn::detect needs eval() mode");
  std::vector<ImageSize> original_sizes;
  for (const auto& image : images) {
    if (image.dim() != 3) throw std::invalid_argument("Mask R-CNN: images must be [3, H, W]");
    original_sizes.push_back({image.size(1), image.size(2)});
  }
  const at::ScalarType type = compute_type();
  std::vector<at::Tensor> typed;
  for (const at::Tensor& image : images) typed.push_back(image.to(type));
  const ImageBatch batch = transform_.forward(typed, nullptr, /*training=*/false, {});
  auto [proposals, heads] = run_networks(batch, nullptr, {});
  transform_.postprocess(heads.detections, batch.image_sizes, original_sizes);
  return heads.detections;
}

at::ScalarType MaskRcnnImpl::compute_type() {
  for (const at::Tensor& parameter : parameters()) {
    if (parameter.is_floating_point()) return parameter.scalar_type();
  }
  return at::kFloat;
}

}  // namespace dtrain::vision::modeling
