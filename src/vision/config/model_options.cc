#include "vision/config/model_options.h"

#include <fmt/format.h>

#include <algorithm>

namespace dtrain::vision::config {

namespace {

// torchvision's FPN backbone feeds the RPN five maps: P2..P5 and the
// max-pooled P6.
constexpr size_t kFpnLevels = 5;

int64_t positive(const Config& c, std::string_view key) {
  const auto value = c.get<int64_t>(key);
  if (value <= 0) throw ConfigError(fmt::format("{} must be positive, got {}", key, value));
  return value;
}

int64_t in_range(const Config& c, std::string_view key, int64_t low, int64_t high) {
  const auto value = c.get<int64_t>(key);
  if (value < low || value > high) {
    throw ConfigError(fmt::format("{} must lie in {}..{}, got {}", key, low, high, value));
  }
  return value;
}

// RoIAlign's sampling ratio: 0 means adaptive (ceil(bin size)).
int64_t sampling_ratio(const Config& c, std::string_view key) {
  const auto value = c.get<int64_t>(key);
  if (value < 0) throw ConfigError(fmt::format("{} must be 0 (adaptive) or positive, got {}", key, value));
  return value;
}

double fraction(const Config& c, std::string_view key) {
  const auto value = c.get<double>(key);
  if (value < 0.0 || value > 1.0) {
    throw ConfigError(fmt::format("{} must lie in [0, 1], got {}", key, format_float(value)));
  }
  return value;
}

// The matcher labels IoU < BG as background and >= FG as foreground.
void check_iou_order(const Config& c, std::string_view bg_key, std::string_view fg_key) {
  const double bg = c.get<double>(bg_key), fg = c.get<double>(fg_key);
  if (bg > fg) {
    throw ConfigError(
        fmt::format("{} ({}) must not exceed {} ({})", bg_key, format_float(bg), fg_key, format_float(fg)));
  }
}

template <size_t N>
std::array<double, N> fixed_list(const Config& c, std::string_view key, std::string_view what, bool must_be_positive) {
  const auto values = c.get<FloatList>(key);
  if (values.size() != N) {
    throw ConfigError(fmt::format("{} must have {} values ({}), got {}", key, N, what, values.size()));
  }
  std::array<double, N> out{};
  for (size_t i = 0; i < N; ++i) {
    if (must_be_positive && values[i] <= 0) {
      throw ConfigError(fmt::format("{} must be positive, got {}", key, format_value(values)));
    }
    out[i] = values[i];
  }
  return out;
}

void check_positive_lists(std::string_view key, const FloatListList& lists) {
  for (const FloatList& list : lists) {
    if (list.empty() || std::any_of(list.begin(), list.end(), [](double v) { return v <= 0; })) {
      throw ConfigError(
          fmt::format("{} must hold non-empty lists of positive values, got {}", key, format_value(lists)));
    }
  }
}

modeling::BackboneOptions backbone_options(const Config& c) {
  modeling::BackboneOptions out;
  out.depth = c.get<int64_t>("MODEL.RESNETS.DEPTH");
  if (out.depth != 18 && out.depth != 34 && out.depth != 50 && out.depth != 101) {
    throw ConfigError(fmt::format("MODEL.RESNETS.DEPTH must be one of 18, 34, 50, 101, got {}", out.depth));
  }
  out.trainable_layers = in_range(c, "MODEL.RESNETS.TRAINABLE_LAYERS", 0, 5);
  const auto norm = c.get<std::string>("MODEL.RESNETS.NORM");
  if (norm != "FrozenBN" && norm != "BN" && norm != "SyncBN") {
    throw ConfigError(fmt::format("MODEL.RESNETS.NORM must be FrozenBN, BN or SyncBN, got '{}'", norm));
  }
  out.frozen_batch_norm = norm == "FrozenBN";
  out.synchronized_batch_norm = norm == "SyncBN";
  out.fpn_out_channels = positive(c, "MODEL.FPN.OUT_CHANNELS");
  return out;
}

modeling::RpnOptions rpn_options(const Config& c) {
  modeling::RpnOptions out;
  out.anchor_sizes = c.get<FloatListList>("MODEL.ANCHOR_GENERATOR.SIZES");
  if (out.anchor_sizes.size() != kFpnLevels) {
    throw ConfigError(fmt::format("MODEL.ANCHOR_GENERATOR.SIZES must have one list per FPN level ({}), got {}",
                                  kFpnLevels, out.anchor_sizes.size()));
  }
  check_positive_lists("MODEL.ANCHOR_GENERATOR.SIZES", out.anchor_sizes);
  out.aspect_ratios = c.get<FloatListList>("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS");
  if (out.aspect_ratios.size() != 1 && out.aspect_ratios.size() != out.anchor_sizes.size()) {
    throw ConfigError(
        fmt::format("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS must have one list for all levels or one per level "
                    "({}), got {}",
                    out.anchor_sizes.size(), out.aspect_ratios.size()));
  }
  check_positive_lists("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS", out.aspect_ratios);
  // One RPN head serves every level, so every level needs as many anchors per location.
  const auto anchors_at = [&](size_t level) {
    return out.anchor_sizes[level].size() * out.aspect_ratios[out.aspect_ratios.size() == 1 ? 0 : level].size();
  };
  for (size_t level = 1; level < out.anchor_sizes.size(); ++level) {
    if (anchors_at(level) != anchors_at(0)) {
      throw ConfigError(fmt::format(
          "MODEL.ANCHOR_GENERATOR.SIZES and ASPECT_RATIOS must give every level as many anchors per location "
          "(the RPN head is shared), got {} at level 0 and {} at level {}",
          anchors_at(0), anchors_at(level), level));
    }
  }
  out.pre_nms_top_n_train = positive(c, "MODEL.RPN.PRE_NMS_TOPK_TRAIN");
  out.pre_nms_top_n_test = positive(c, "MODEL.RPN.PRE_NMS_TOPK_TEST");
  out.post_nms_top_n_train = positive(c, "MODEL.RPN.POST_NMS_TOPK_TRAIN");
  out.post_nms_top_n_test = positive(c, "MODEL.RPN.POST_NMS_TOPK_TEST");
  out.nms_thresh = fraction(c, "MODEL.RPN.NMS_THRESH");
  out.fg_iou_thresh = fraction(c, "MODEL.RPN.FG_IOU_THRESH");
  out.bg_iou_thresh = fraction(c, "MODEL.RPN.BG_IOU_THRESH");
  check_iou_order(c, "MODEL.RPN.BG_IOU_THRESH", "MODEL.RPN.FG_IOU_THRESH");
  out.batch_size_per_image = positive(c, "MODEL.RPN.BATCH_SIZE_PER_IMAGE");
  out.positive_fraction = fraction(c, "MODEL.RPN.POSITIVE_FRACTION");
  out.score_thresh = fraction(c, "MODEL.RPN.SCORE_THRESH");
  return out;
}

modeling::RoiHeadsOptions roi_heads_options(const Config& c) {
  modeling::RoiHeadsOptions out;
  out.num_classes = c.get<int64_t>("MODEL.ROI_HEADS.NUM_CLASSES");
  if (out.num_classes < 2) {
    throw ConfigError(fmt::format(
        "MODEL.ROI_HEADS.NUM_CLASSES counts the background too and must be at least 2, got {}", out.num_classes));
  }
  out.batch_size_per_image = positive(c, "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE");
  out.positive_fraction = fraction(c, "MODEL.ROI_HEADS.POSITIVE_FRACTION");
  out.fg_iou_thresh = fraction(c, "MODEL.ROI_HEADS.FG_IOU_THRESH");
  out.bg_iou_thresh = fraction(c, "MODEL.ROI_HEADS.BG_IOU_THRESH");
  check_iou_order(c, "MODEL.ROI_HEADS.BG_IOU_THRESH", "MODEL.ROI_HEADS.FG_IOU_THRESH");
  out.score_thresh = fraction(c, "MODEL.ROI_HEADS.SCORE_THRESH_TEST");
  out.nms_thresh = fraction(c, "MODEL.ROI_HEADS.NMS_THRESH_TEST");
  out.detections_per_image = positive(c, "MODEL.ROI_HEADS.DETECTIONS_PER_IMAGE");

  out.box_pooler_resolution = positive(c, "MODEL.ROI_BOX_HEAD.POOLER_RESOLUTION");
  out.box_pooler_sampling_ratio = sampling_ratio(c, "MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO");
  out.box_fc_dim = positive(c, "MODEL.ROI_BOX_HEAD.FC_DIM");
  out.bbox_reg_weights = fixed_list<4>(c, "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS", "x, y, w, h", true);

  out.mask_on = c.get<bool>("MODEL.MASK_ON");
  out.mask_pooler_resolution = positive(c, "MODEL.ROI_MASK_HEAD.POOLER_RESOLUTION");
  out.mask_pooler_sampling_ratio = sampling_ratio(c, "MODEL.ROI_MASK_HEAD.POOLER_SAMPLING_RATIO");
  out.mask_conv_dim = positive(c, "MODEL.ROI_MASK_HEAD.CONV_DIM");
  out.mask_num_conv = positive(c, "MODEL.ROI_MASK_HEAD.NUM_CONV");
  return out;
}

modeling::TransformOptions transform_options(const Config& c) {
  modeling::TransformOptions out;
  out.min_size_train = c.get<IntList>("INPUT.MIN_SIZE_TRAIN");
  if (out.min_size_train.empty() ||
      std::any_of(out.min_size_train.begin(), out.min_size_train.end(), [](int64_t s) { return s <= 0; })) {
    throw ConfigError(fmt::format("INPUT.MIN_SIZE_TRAIN must hold one or more positive sizes, got {}",
                                  format_value(out.min_size_train)));
  }
  out.max_size_train = positive(c, "INPUT.MAX_SIZE_TRAIN");
  out.min_size_test = positive(c, "INPUT.MIN_SIZE_TEST");
  out.max_size_test = positive(c, "INPUT.MAX_SIZE_TEST");
  out.size_divisible = positive(c, "INPUT.SIZE_DIVISIBILITY");
  out.pixel_mean = fixed_list<3>(c, "MODEL.PIXEL_MEAN", "R, G, B", false);
  out.pixel_std = fixed_list<3>(c, "MODEL.PIXEL_STD", "R, G, B", true);
  return out;
}

}  // namespace

// SOLVER.AMP (Detectron2's key) and MODEL.CHANNELS_LAST: how the networks compute, not what.
modeling::ComputeOptions compute_options(const Config& c) {
  modeling::ComputeOptions out;
  const auto dtype = c.get<std::string>("SOLVER.AMP.DTYPE");
  if (dtype != "float16" && dtype != "bfloat16") {
    throw ConfigError(fmt::format("SOLVER.AMP.DTYPE must be float16 or bfloat16, got '{}'", dtype));
  }
  if (c.get<bool>("SOLVER.AMP.ENABLED")) {
    if (c.get<std::string>("MODEL.PRECISION") != "float32") {
      throw ConfigError("SOLVER.AMP.ENABLED needs MODEL.PRECISION float32 (autocast leaves float64 as it is)");
    }
    out.mixed_precision = dtype == "float16" ? modeling::MixedPrecision::kFloat16 : modeling::MixedPrecision::kBFloat16;
  }
  out.channels_last = c.get<bool>("MODEL.CHANNELS_LAST");
  return out;
}

modeling::MaskRcnnOptions to_model_options(const Config& config) {
  const auto architecture = config.get<std::string>("MODEL.META_ARCHITECTURE");
  if (architecture != "GeneralizedRCNN") {
    throw ConfigError(
        fmt::format("MODEL.META_ARCHITECTURE must be GeneralizedRCNN (the only one built), got '{}'", architecture));
  }
  modeling::MaskRcnnOptions options;
  options.backbone = backbone_options(config);
  options.rpn = rpn_options(config);
  options.roi_heads = roi_heads_options(config);
  options.transform = transform_options(config);
  options.compute = compute_options(config);
  return options;
}

}  // namespace dtrain::vision::config
