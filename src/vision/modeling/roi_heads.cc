#include "vision/modeling/roi_heads.h"

#include "vision/modeling/detection_losses.h"
#include "vision/ops/box_ops.h"
#include "vision/ops/nms.h"

namespace dtrain::vision::modeling {
namespace {

// Detections smaller than this (in pixels) are dropped before NMS.
constexpr double kMinDetectionSize = 1e-2;
// The pooled levels: P2..P5, not the extra max-pool level.
constexpr size_t kPooledLevels = 4;

std::vector<at::Tensor> pooled_levels(const std::vector<at::Tensor>& features) {
  return {features.begin(), features.begin() + static_cast<std::ptrdiff_t>(std::min(kPooledLevels, features.size()))};
}

}  // namespace

RoiHeadsImpl::RoiHeadsImpl(const RoiHeadsOptions& options, int64_t in_channels)
    : options_(options),
      matcher_(options.fg_iou_thresh, options.bg_iou_thresh, /*allow_low_quality_matches=*/false),
      sampler_(options.batch_size_per_image, options.positive_fraction),
      box_coder_(options.bbox_reg_weights),
      box_pooler_({options.box_pooler_resolution, options.box_pooler_resolution}, options.box_pooler_sampling_ratio),
      mask_pooler_({options.mask_pooler_resolution, options.mask_pooler_resolution},
                   options.mask_pooler_sampling_ratio) {
  const int64_t pooled = in_channels * options.box_pooler_resolution * options.box_pooler_resolution;
  box_head_ = register_module("box_head", BoxHead(pooled, options.box_fc_dim));
  box_predictor_ = register_module("box_predictor", BoxPredictor(options.box_fc_dim, options.num_classes));
  if (options.mask_on) {
    mask_head_ = register_module("mask_head", MaskHead(in_channels, options.mask_conv_dim, options.mask_num_conv));
    mask_predictor_ = register_module(
        "mask_predictor", MaskPredictor(mask_head_->out_channels(), options.mask_conv_dim, options.num_classes));
  }
}

RoiTrainingSample RoiHeadsImpl::sample_proposals(const std::vector<at::Tensor>& proposals,
                                                 const std::vector<DetectionTargets>& targets,
                                                 const ops::ImageGenerators& generators) const {
  RoiTrainingSample all;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const at::Tensor gt_boxes = targets[i].boxes.to(proposals[i].scalar_type());
    // The ground truth is always a candidate, so every object gets positives.
    at::Tensor candidates = at::cat({proposals[i], gt_boxes}, 0);
    at::Tensor matched, labels;
    if (gt_boxes.size(0) == 0) {
      matched = at::zeros({candidates.size(0)}, candidates.options().dtype(at::kLong));
      labels = at::zeros({candidates.size(0)}, candidates.options().dtype(at::kLong));
    } else {
      const at::Tensor raw = matcher_.match(ops::box_iou(gt_boxes, candidates));
      matched = raw.clamp_min(0);
      labels = targets[i].labels.index_select(0, matched).to(at::kLong);
      labels.masked_fill_(raw == ops::Matcher::kBelowLowThreshold, 0);
      labels.masked_fill_(raw == ops::Matcher::kBetweenThresholds, -1);
    }
    all.proposals.push_back(candidates);
    all.labels.push_back(labels);
    all.matched_idxs.push_back(matched);
  }
  const ops::SampledMasks sampled = sampler_.sample(all.labels, generators);
  for (size_t i = 0; i < proposals.size(); ++i) {
    const at::Tensor chosen = at::where(sampled.positive[i].logical_or(sampled.negative[i]))[0];
    all.proposals[i] = all.proposals[i].index_select(0, chosen);
    all.labels[i] = all.labels[i].index_select(0, chosen);
    all.matched_idxs[i] = all.matched_idxs[i].index_select(0, chosen);
  }
  return all;
}

RoiHeadsOutput RoiHeadsImpl::forward(const std::vector<at::Tensor>& features, const std::vector<at::Tensor>& proposals,
                                     const std::vector<ImageSize>& image_sizes,
                                     const std::vector<DetectionTargets>* targets,
                                     const ops::ImageGenerators& generators, RoiTrainingSample* sample_out) {
  const std::vector<at::Tensor> levels = pooled_levels(features);
  RoiHeadsOutput out;
  if (is_training()) {
    TORCH_CHECK(targets != nullptr, "the RoI heads need targets in training");
    RoiTrainingSample sample = sample_proposals(proposals, *targets, generators);
    std::vector<at::Tensor> regression_targets;
    for (size_t i = 0; i < proposals.size(); ++i) {
      at::Tensor gt_boxes = (*targets)[i].boxes.to(proposals[i].scalar_type());
      if (gt_boxes.size(0) == 0) gt_boxes = at::zeros({1, 4}, gt_boxes.options());
      regression_targets.push_back(
          box_coder_.encode(gt_boxes.index_select(0, sample.matched_idxs[i]), sample.proposals[i]));
    }
    const at::Tensor box_features = box_head_->forward(box_pooler_.forward(levels, sample.proposals, image_sizes));
    auto [class_logits, box_regression] = box_predictor_->forward(box_features);
    FastRcnnLosses losses = fast_rcnn_loss(class_logits, box_regression, sample.labels, regression_targets);
    out.losses["loss_classifier"] = losses.classifier;
    out.losses["loss_box_reg"] = losses.box_reg;
    for (const at::Tensor& labels : sample.labels) {
      out.sampled_proposals += labels.numel();
      out.positive_proposals += (labels > 0).sum().item<int64_t>();
    }
    if (options_.mask_on) {
      std::vector<at::Tensor> positive_proposals, positive_matches, gt_masks, gt_labels;
      for (size_t i = 0; i < proposals.size(); ++i) {
        const at::Tensor positive = at::where(sample.labels[i] > 0)[0];
        positive_proposals.push_back(sample.proposals[i].index_select(0, positive));
        positive_matches.push_back(sample.matched_idxs[i].index_select(0, positive));
        gt_masks.push_back((*targets)[i].masks);
        gt_labels.push_back((*targets)[i].labels);
      }
      const at::Tensor mask_logits =
          mask_predictor_->forward(mask_head_->forward(mask_pooler_.forward(levels, positive_proposals, image_sizes)));
      out.losses["loss_mask"] = mask_rcnn_loss(mask_logits, positive_proposals, gt_masks, gt_labels, positive_matches);
    }
    if (sample_out) *sample_out = std::move(sample);
    return out;
  }

  const at::Tensor box_features = box_head_->forward(box_pooler_.forward(levels, proposals, image_sizes));
  auto [class_logits, box_regression] = box_predictor_->forward(box_features);
  out.detections = postprocess(class_logits, box_regression, proposals, image_sizes);
  if (options_.mask_on) {
    std::vector<at::Tensor> boxes;
    for (const auto& d : out.detections) boxes.push_back(d.boxes);
    const at::Tensor mask_logits =
        mask_predictor_->forward(mask_head_->forward(mask_pooler_.forward(levels, boxes, image_sizes)));
    // Each detection's probability map at its own class.
    const at::Tensor labels = at::cat(
        [&] {
          std::vector<at::Tensor> l;
          for (const auto& d : out.detections) l.push_back(d.labels);
          return l;
        }(),
        0);
    const at::Tensor rows = at::arange(labels.size(0), labels.options());
    const at::Tensor probs = mask_logits.sigmoid().index({rows, labels}).unsqueeze(1);
    int64_t offset = 0;
    for (auto& d : out.detections) {
      d.masks = probs.narrow(0, offset, d.boxes.size(0));
      offset += d.boxes.size(0);
    }
  }
  return out;
}

std::vector<Detections> RoiHeadsImpl::postprocess(const at::Tensor& class_logits, const at::Tensor& box_regression,
                                                  const std::vector<at::Tensor>& proposals,
                                                  const std::vector<ImageSize>& image_sizes) const {
  const int64_t num_classes = class_logits.size(-1);
  const at::Tensor all_boxes =
      box_coder_.decode(box_regression, at::cat(proposals, 0)).reshape({class_logits.size(0), -1, 4});
  const at::Tensor all_scores = at::softmax(class_logits, -1);
  std::vector<Detections> result;
  int64_t offset = 0;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const int64_t count = proposals[i].size(0);
    at::Tensor boxes =
        ops::clip_boxes_to_image(all_boxes.narrow(0, offset, count), image_sizes[i][0], image_sizes[i][1]);
    at::Tensor scores = all_scores.narrow(0, offset, count);
    offset += count;
    at::Tensor labels = at::arange(num_classes, scores.options().dtype(at::kLong)).view({1, -1}).expand_as(scores);
    // Class 0 is the background: no detections of it.
    boxes = boxes.slice(1, 1).reshape({-1, 4});
    scores = scores.slice(1, 1).reshape(-1);
    labels = labels.slice(1, 1).reshape(-1);
    at::Tensor keep = at::where(scores > options_.score_thresh)[0];
    boxes = boxes.index_select(0, keep), scores = scores.index_select(0, keep), labels = labels.index_select(0, keep);
    keep = ops::remove_small_boxes(boxes, kMinDetectionSize);
    boxes = boxes.index_select(0, keep), scores = scores.index_select(0, keep), labels = labels.index_select(0, keep);
    keep = ops::batched_nms(boxes, scores, labels, options_.nms_thresh).slice(0, 0, options_.detections_per_image);
    result.push_back({boxes.index_select(0, keep), labels.index_select(0, keep), scores.index_select(0, keep), {}});
  }
  return result;
}

}  // namespace dtrain::vision::modeling
