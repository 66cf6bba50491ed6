#include "vision/modeling/region_proposal_network.h"

#include "vision/modeling/autocast.h"

#include "vision/ops/box_ops.h"
#include "vision/ops/nms.h"

namespace dtrain::vision::modeling {
namespace {

// Proposals smaller than this (in pixels) are dropped before NMS.
constexpr double kMinProposalSize = 1e-3;

std::vector<std::vector<double>> ratios_per_level(const RpnOptions& options) {
  if (options.aspect_ratios.size() == 1) {
    return std::vector<std::vector<double>>(options.anchor_sizes.size(), options.aspect_ratios[0]);
  }
  return options.aspect_ratios;
}

torch::nn::Conv2d make_conv(int64_t in, int64_t out, int64_t kernel) {
  torch::nn::Conv2d conv(torch::nn::Conv2dOptions(in, out, kernel).padding(kernel / 2));
  torch::nn::init::normal_(conv->weight, 0.0, 0.01);
  torch::nn::init::zeros_(conv->bias);
  return conv;
}

// [N, A*C, H, W] -> [N, H*W*A, C]: anchors ordered by location, then cell anchor.
at::Tensor flatten_level(const at::Tensor& x, int64_t channels_per_anchor) {
  const int64_t n = x.size(0), h = x.size(2), w = x.size(3);
  return x.view({n, -1, channels_per_anchor, h, w}).permute({0, 3, 4, 1, 2}).reshape({n, -1, channels_per_anchor});
}

}  // namespace

int64_t anchors_per_location(const RpnOptions& options) {
  return static_cast<int64_t>(options.anchor_sizes.at(0).size() * ratios_per_level(options).at(0).size());
}

RpnHeadImpl::RpnHeadImpl(int64_t in_channels, int64_t anchors_per_location) {
  conv_ = make_conv(in_channels, in_channels, 3);
  // conv.0.0: the conv inside a conv+ReLU block inside a sequence of such
  // blocks (torchvision's RPNHead with conv_depth 1).
  torch::nn::ModuleList blocks;
  blocks->push_back(torch::nn::Sequential(conv_, torch::nn::ReLU()));
  register_module("conv", blocks);
  cls_logits_ = register_module("cls_logits", make_conv(in_channels, anchors_per_location, 1));
  bbox_pred_ = register_module("bbox_pred", make_conv(in_channels, anchors_per_location * 4, 1));
}

std::pair<std::vector<at::Tensor>, std::vector<at::Tensor>> RpnHeadImpl::forward(
    const std::vector<at::Tensor>& features) {
  std::vector<at::Tensor> logits, deltas;
  for (const auto& feature : features) {
    at::Tensor t = conv_->forward(feature).relu_();
    logits.push_back(cls_logits_->forward(t));
    deltas.push_back(bbox_pred_->forward(t));
  }
  return {logits, deltas};
}

RegionProposalNetworkImpl::RegionProposalNetworkImpl(const RpnOptions& options, int64_t in_channels)
    : options_(options),
      anchor_generator_(options.anchor_sizes, ratios_per_level(options)),
      matcher_(options.fg_iou_thresh, options.bg_iou_thresh, /*allow_low_quality_matches=*/true),
      sampler_(options.batch_size_per_image, options.positive_fraction) {
  head_ = register_module("head", RpnHead(in_channels, anchors_per_location(options)));
}

std::vector<at::Tensor> RegionProposalNetworkImpl::select_proposals(const at::Tensor& proposals,
                                                                    const at::Tensor& objectness_flat,
                                                                    const std::vector<ImageSize>& image_sizes,
                                                                    const std::vector<int64_t>& anchors_per_level,
                                                                    std::vector<at::Tensor>* scores) const {
  const int64_t num_images = proposals.size(0);
  const at::Tensor objectness = objectness_flat.detach().reshape({num_images, -1});
  const int64_t pre_nms = is_training() ? options_.pre_nms_top_n_train : options_.pre_nms_top_n_test;
  const int64_t post_nms = is_training() ? options_.post_nms_top_n_train : options_.post_nms_top_n_test;

  // The best pre_nms anchors of each level, with the level kept for NMS.
  std::vector<at::Tensor> top_indices, top_levels;
  int64_t offset = 0;
  for (size_t level = 0; level < anchors_per_level.size(); ++level) {
    const int64_t count = anchors_per_level[level];
    const int64_t k = std::min(pre_nms, count);
    at::Tensor idx = std::get<1>(objectness.narrow(1, offset, count).topk(k, 1));
    top_indices.push_back(idx + offset);
    top_levels.push_back(at::full({num_images, k}, static_cast<int64_t>(level), idx.options()));
    offset += count;
  }
  const at::Tensor top = at::cat(top_indices, 1);
  const at::Tensor levels = at::cat(top_levels, 1);
  const at::Tensor batch = at::arange(num_images, top.options()).unsqueeze(1);
  const at::Tensor top_objectness = objectness.index({batch, top}).sigmoid();
  const at::Tensor top_proposals = proposals.index({batch, top});

  std::vector<at::Tensor> kept_boxes;
  for (int64_t i = 0; i < num_images; ++i) {
    at::Tensor boxes = ops::clip_boxes_to_image(top_proposals[i], image_sizes[i][0], image_sizes[i][1]);
    at::Tensor probs = top_objectness[i];
    at::Tensor lvl = levels[i];
    at::Tensor keep = ops::remove_small_boxes(boxes, kMinProposalSize);
    boxes = boxes.index_select(0, keep), probs = probs.index_select(0, keep), lvl = lvl.index_select(0, keep);
    keep = at::where(probs >= options_.score_thresh)[0];
    boxes = boxes.index_select(0, keep), probs = probs.index_select(0, keep), lvl = lvl.index_select(0, keep);
    keep = ops::batched_nms(boxes, probs, lvl, options_.nms_thresh);
    keep = keep.slice(0, 0, post_nms);
    kept_boxes.push_back(boxes.index_select(0, keep));
    if (scores) scores->push_back(probs.index_select(0, keep));
  }
  return kept_boxes;
}

RpnOutput RegionProposalNetworkImpl::forward(const std::vector<at::Tensor>& features,
                                             const std::vector<ImageSize>& image_sizes, ImageSize padded_size,
                                             const std::vector<DetectionTargets>* targets,
                                             const ops::ImageGenerators& generators) {
  auto [logits, deltas] = head_->forward(features);
  for (at::Tensor& l : logits) l = full_precision(l);  // from an autocast network: geometry and losses in float32
  for (at::Tensor& d : deltas) d = full_precision(d);
  const int64_t num_images = features[0].size(0);

  std::vector<std::array<int64_t, 2>> feature_sizes;
  std::vector<int64_t> anchors_per_level;
  std::vector<at::Tensor> flat_logits, flat_deltas;
  for (size_t l = 0; l < features.size(); ++l) {
    feature_sizes.push_back({features[l].size(2), features[l].size(3)});
    anchors_per_level.push_back(logits[l].size(1) * logits[l].size(2) * logits[l].size(3));
    flat_logits.push_back(flatten_level(logits[l], 1));
    flat_deltas.push_back(flatten_level(deltas[l], 4));
  }
  const at::Tensor objectness = at::cat(flat_logits, 1).flatten(0, -2);    // [N * anchors, 1]
  const at::Tensor box_deltas = at::cat(flat_deltas, 1).reshape({-1, 4});  // [N * anchors, 4]

  // Every image of the batch shares the padded size, hence the anchors.
  const at::Tensor anchors =
      anchor_generator_
          .generate(padded_size, feature_sizes, geometry_type(features[0].scalar_type()), features[0].device())
          .all;
  const at::Tensor all_anchors = anchors.repeat({num_images, 1});
  const at::Tensor proposals = box_coder_.decode(box_deltas.detach(), all_anchors).view({num_images, -1, 4});

  RpnOutput out;
  out.proposals = select_proposals(proposals, objectness, image_sizes, anchors_per_level, &out.scores);
  if (!is_training()) return out;
  TORCH_CHECK(targets != nullptr, "the region proposal network needs targets in training");

  std::vector<at::Tensor> labels, regression_targets;
  for (int64_t i = 0; i < num_images; ++i) {
    const at::Tensor& gt = (*targets)[static_cast<size_t>(i)].boxes;
    if (gt.numel() == 0) {
      // No objects: every anchor is background.
      labels.push_back(at::zeros({anchors.size(0)}, anchors.options()));
      regression_targets.push_back(box_coder_.encode(at::zeros_like(anchors), anchors));
      continue;
    }
    const at::Tensor matched = matcher_.match(ops::box_iou(gt.to(anchors.scalar_type()), anchors));
    at::Tensor image_labels = (matched >= 0).to(anchors.scalar_type());
    image_labels.masked_fill_(matched == ops::Matcher::kBelowLowThreshold, 0.0);
    image_labels.masked_fill_(matched == ops::Matcher::kBetweenThresholds, -1.0);
    labels.push_back(image_labels);
    regression_targets.push_back(
        box_coder_.encode(gt.to(anchors.scalar_type()).index_select(0, matched.clamp_min(0)), anchors));
  }
  const ops::SampledMasks sampled = sampler_.sample(labels, generators);
  const at::Tensor positive = at::where(at::cat(sampled.positive, 0))[0];
  const at::Tensor negative = at::where(at::cat(sampled.negative, 0))[0];
  const at::Tensor chosen = at::cat({positive, negative}, 0);
  const at::Tensor all_labels = at::cat(labels, 0);
  const at::Tensor all_targets = at::cat(regression_targets, 0);
  out.sampled_anchors = chosen.numel();

  out.loss_rpn_box_reg = at::smooth_l1_loss(box_deltas.index_select(0, positive), all_targets.index_select(0, positive),
                                            at::Reduction::Sum, 1.0 / 9) /
                         static_cast<double>(chosen.numel());
  out.loss_objectness = at::binary_cross_entropy_with_logits(objectness.flatten().index_select(0, chosen),
                                                             all_labels.index_select(0, chosen));
  return out;
}

}  // namespace dtrain::vision::modeling
