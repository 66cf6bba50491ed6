#pragma once

// Everything that shapes a Mask R-CNN model, as plain values. The defaults are
// torchvision's maskrcnn_resnet50_fpn; the config tree (vision/config) fills
// this struct from YAML files and KEY VALUE overrides, and the model reads
// nothing else, so a model can be built in a test without any config file.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::vision::modeling {

struct BackboneOptions {
  int64_t depth = 50;             // ResNet 18, 34, 50 or 101
  int64_t trainable_layers = 3;   // 0..5: how many of layer4, layer3, layer2, layer1, conv1 train
  bool frozen_batch_norm = true;  // false: ordinary BatchNorm2d (torchvision without weights_backbone)
  int64_t fpn_out_channels = 256;
  bool synchronized_batch_norm = false;  // SyncBN: the trainer makes the BatchNorms take statistics over all ranks
};

struct RpnOptions {
  std::vector<std::vector<double>> anchor_sizes{{32}, {64}, {128}, {256}, {512}};
  // One entry for all levels, or one per level.
  std::vector<std::vector<double>> aspect_ratios{{0.5, 1.0, 2.0}};
  int64_t pre_nms_top_n_train = 2000;
  int64_t pre_nms_top_n_test = 1000;
  int64_t post_nms_top_n_train = 2000;
  int64_t post_nms_top_n_test = 1000;
  double nms_thresh = 0.7;
  double fg_iou_thresh = 0.7;
  double bg_iou_thresh = 0.3;
  int64_t batch_size_per_image = 256;
  double positive_fraction = 0.5;
  double score_thresh = 0.0;
};

struct RoiHeadsOptions {
  int64_t num_classes = 91;  // including background, as torchvision counts
  int64_t box_pooler_resolution = 7;
  int64_t box_pooler_sampling_ratio = 2;
  int64_t box_fc_dim = 1024;
  std::array<double, 4> bbox_reg_weights{10.0, 10.0, 5.0, 5.0};
  double fg_iou_thresh = 0.5;
  double bg_iou_thresh = 0.5;
  int64_t batch_size_per_image = 512;
  double positive_fraction = 0.25;
  double score_thresh = 0.05;
  double nms_thresh = 0.5;
  int64_t detections_per_image = 100;
  bool mask_on = true;
  int64_t mask_pooler_resolution = 14;
  int64_t mask_pooler_sampling_ratio = 2;
  int64_t mask_conv_dim = 256;
  int64_t mask_num_conv = 4;
};

struct TransformOptions {
  // Training picks one of min_size_train at random per batch (torchvision's
  // GeneralizedRCNNTransform with a tuple of sizes); inference uses min_size_test.
  std::vector<int64_t> min_size_train{800};
  int64_t max_size_train = 1333;
  int64_t min_size_test = 800;
  int64_t max_size_test = 1333;
  // In the 0..1 range, RGB, as torchvision normalises.
  std::array<double, 3> pixel_mean{0.485, 0.456, 0.406};
  std::array<double, 3> pixel_std{0.229, 0.224, 0.225};
  int64_t size_divisible = 32;
};

// SOLVER.AMP: whether the networks (backbone, heads) run under autocast, and in which 16-bit
// type. Box geometry, losses and parameters stay in the model's own type (float32).
enum class MixedPrecision { kOff, kFloat16, kBFloat16 };

struct ComputeOptions {
  MixedPrecision mixed_precision = MixedPrecision::kOff;
  bool channels_last = false;  // MODEL.CHANNELS_LAST: convolution weights and images in NHWC
};

struct MaskRcnnOptions {
  BackboneOptions backbone;
  RpnOptions rpn;
  RoiHeadsOptions roi_heads;
  TransformOptions transform;
  ComputeOptions compute;
};

}  // namespace dtrain::vision::modeling
