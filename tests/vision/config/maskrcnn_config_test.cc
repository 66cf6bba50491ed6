// The Mask R-CNN schema: its defaults are the model's defaults, the shipped
// configs/ load and say what they claim, validation names the key, and
// docs/config.md documents every key.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/vision/config/temp_files.h"
#include "vision/config/maskrcnn_defaults.h"
#include "vision/config/model_options.h"
#include "vision/data/synthetic_shapes.h"

namespace dtrain::vision::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kSourceDir = DTRAIN_SOURCE_DIR;

// Every field, so that a field the config forgets or maps wrongly shows up by name.
void expect_same_options(const modeling::MaskRcnnOptions& a, const modeling::MaskRcnnOptions& b) {
  EXPECT_EQ(a.backbone.depth, b.backbone.depth);
  EXPECT_EQ(a.backbone.trainable_layers, b.backbone.trainable_layers);
  EXPECT_EQ(a.backbone.frozen_batch_norm, b.backbone.frozen_batch_norm);
  EXPECT_EQ(a.backbone.fpn_out_channels, b.backbone.fpn_out_channels);
  EXPECT_EQ(a.backbone.synchronized_batch_norm, b.backbone.synchronized_batch_norm);

  EXPECT_EQ(a.rpn.anchor_sizes, b.rpn.anchor_sizes);
  EXPECT_EQ(a.rpn.aspect_ratios, b.rpn.aspect_ratios);
  EXPECT_EQ(a.rpn.pre_nms_top_n_train, b.rpn.pre_nms_top_n_train);
  EXPECT_EQ(a.rpn.pre_nms_top_n_test, b.rpn.pre_nms_top_n_test);
  EXPECT_EQ(a.rpn.post_nms_top_n_train, b.rpn.post_nms_top_n_train);
  EXPECT_EQ(a.rpn.post_nms_top_n_test, b.rpn.post_nms_top_n_test);
  EXPECT_EQ(a.rpn.nms_thresh, b.rpn.nms_thresh);
  EXPECT_EQ(a.rpn.fg_iou_thresh, b.rpn.fg_iou_thresh);
  EXPECT_EQ(a.rpn.bg_iou_thresh, b.rpn.bg_iou_thresh);
  EXPECT_EQ(a.rpn.batch_size_per_image, b.rpn.batch_size_per_image);
  EXPECT_EQ(a.rpn.positive_fraction, b.rpn.positive_fraction);
  EXPECT_EQ(a.rpn.score_thresh, b.rpn.score_thresh);

  EXPECT_EQ(a.roi_heads.num_classes, b.roi_heads.num_classes);
  EXPECT_EQ(a.roi_heads.box_pooler_resolution, b.roi_heads.box_pooler_resolution);
  EXPECT_EQ(a.roi_heads.box_pooler_sampling_ratio, b.roi_heads.box_pooler_sampling_ratio);
  EXPECT_EQ(a.roi_heads.box_fc_dim, b.roi_heads.box_fc_dim);
  EXPECT_EQ(a.roi_heads.bbox_reg_weights, b.roi_heads.bbox_reg_weights);
  EXPECT_EQ(a.roi_heads.fg_iou_thresh, b.roi_heads.fg_iou_thresh);
  EXPECT_EQ(a.roi_heads.bg_iou_thresh, b.roi_heads.bg_iou_thresh);
  EXPECT_EQ(a.roi_heads.batch_size_per_image, b.roi_heads.batch_size_per_image);
  EXPECT_EQ(a.roi_heads.positive_fraction, b.roi_heads.positive_fraction);
  EXPECT_EQ(a.roi_heads.score_thresh, b.roi_heads.score_thresh);
  EXPECT_EQ(a.roi_heads.nms_thresh, b.roi_heads.nms_thresh);
  EXPECT_EQ(a.roi_heads.detections_per_image, b.roi_heads.detections_per_image);
  EXPECT_EQ(a.roi_heads.mask_on, b.roi_heads.mask_on);
  EXPECT_EQ(a.roi_heads.mask_pooler_resolution, b.roi_heads.mask_pooler_resolution);
  EXPECT_EQ(a.roi_heads.mask_pooler_sampling_ratio, b.roi_heads.mask_pooler_sampling_ratio);
  EXPECT_EQ(a.roi_heads.mask_conv_dim, b.roi_heads.mask_conv_dim);
  EXPECT_EQ(a.roi_heads.mask_num_conv, b.roi_heads.mask_num_conv);

  EXPECT_EQ(a.transform.min_size_train, b.transform.min_size_train);
  EXPECT_EQ(a.transform.max_size_train, b.transform.max_size_train);
  EXPECT_EQ(a.transform.min_size_test, b.transform.min_size_test);
  EXPECT_EQ(a.transform.max_size_test, b.transform.max_size_test);
  EXPECT_EQ(a.transform.pixel_mean, b.transform.pixel_mean);
  EXPECT_EQ(a.transform.pixel_std, b.transform.pixel_std);
  EXPECT_EQ(a.transform.size_divisible, b.transform.size_divisible);

  EXPECT_EQ(a.compute.mixed_precision, b.compute.mixed_precision);
  EXPECT_EQ(a.compute.channels_last, b.compute.channels_last);
}

TEST(ConfigMaskRcnn, DefaultsAreTheModelsDefaults) {
  expect_same_options(to_model_options(maskrcnn_defaults()), modeling::MaskRcnnOptions{});
}

TEST(ConfigMaskRcnn, EveryModelKeyReachesItsField) {
  // Change every MODEL.* and INPUT.* key away from its default; each field must follow.
  Config c = maskrcnn_defaults();
  c.merge_from_list({"MODEL.MASK_ON",
                     "false",
                     "MODEL.CHANNELS_LAST",
                     "true",
                     "SOLVER.AMP.ENABLED",
                     "true",
                     "SOLVER.AMP.DTYPE",
                     "bfloat16",
                     "MODEL.PIXEL_MEAN",
                     "[0.1, 0.2, 0.3]",
                     "MODEL.PIXEL_STD",
                     "[0.4, 0.5, 0.6]",
                     "MODEL.RESNETS.DEPTH",
                     "34",
                     "MODEL.RESNETS.TRAINABLE_LAYERS",
                     "0",
                     "MODEL.RESNETS.NORM",
                     "BN",
                     "MODEL.FPN.OUT_CHANNELS",
                     "64",
                     "MODEL.ANCHOR_GENERATOR.SIZES",
                     "[[8, 9], [16, 17], [32, 33], [64, 65], [128, 129]]",
                     "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS",
                     "[[1], [1], [1], [1], [1]]",
                     "MODEL.RPN.PRE_NMS_TOPK_TRAIN",
                     "11",
                     "MODEL.RPN.PRE_NMS_TOPK_TEST",
                     "12",
                     "MODEL.RPN.POST_NMS_TOPK_TRAIN",
                     "13",
                     "MODEL.RPN.POST_NMS_TOPK_TEST",
                     "14",
                     "MODEL.RPN.NMS_THRESH",
                     "0.61",
                     "MODEL.RPN.FG_IOU_THRESH",
                     "0.62",
                     "MODEL.RPN.BG_IOU_THRESH",
                     "0.21",
                     "MODEL.RPN.BATCH_SIZE_PER_IMAGE",
                     "15",
                     "MODEL.RPN.POSITIVE_FRACTION",
                     "0.41",
                     "MODEL.RPN.SCORE_THRESH",
                     "0.01",
                     "MODEL.ROI_HEADS.NUM_CLASSES",
                     "3",
                     "MODEL.ROI_HEADS.BATCH_SIZE_PER_IMAGE",
                     "16",
                     "MODEL.ROI_HEADS.POSITIVE_FRACTION",
                     "0.42",
                     "MODEL.ROI_HEADS.FG_IOU_THRESH",
                     "0.63",
                     "MODEL.ROI_HEADS.BG_IOU_THRESH",
                     "0.22",
                     "MODEL.ROI_HEADS.SCORE_THRESH_TEST",
                     "0.02",
                     "MODEL.ROI_HEADS.NMS_THRESH_TEST",
                     "0.43",
                     "MODEL.ROI_HEADS.DETECTIONS_PER_IMAGE",
                     "17",
                     "MODEL.ROI_BOX_HEAD.POOLER_RESOLUTION",
                     "5",
                     "MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO",
                     "0",
                     "MODEL.ROI_BOX_HEAD.FC_DIM",
                     "18",
                     "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS",
                     "[1, 2, 3, 4]",
                     "MODEL.ROI_MASK_HEAD.POOLER_RESOLUTION",
                     "6",
                     "MODEL.ROI_MASK_HEAD.POOLER_SAMPLING_RATIO",
                     "3",
                     "MODEL.ROI_MASK_HEAD.CONV_DIM",
                     "19",
                     "MODEL.ROI_MASK_HEAD.NUM_CONV",
                     "1",
                     "INPUT.MIN_SIZE_TRAIN",
                     "(100, 110)",
                     "INPUT.MAX_SIZE_TRAIN",
                     "200",
                     "INPUT.MIN_SIZE_TEST",
                     "120",
                     "INPUT.MAX_SIZE_TEST",
                     "210",
                     "INPUT.SIZE_DIVISIBILITY",
                     "16"});

  modeling::MaskRcnnOptions expected;
  expected.backbone = {34, 0, false, 64};
  expected.rpn.anchor_sizes = {{8, 9}, {16, 17}, {32, 33}, {64, 65}, {128, 129}};
  expected.rpn.aspect_ratios = {{1}, {1}, {1}, {1}, {1}};
  expected.rpn.pre_nms_top_n_train = 11;
  expected.rpn.pre_nms_top_n_test = 12;
  expected.rpn.post_nms_top_n_train = 13;
  expected.rpn.post_nms_top_n_test = 14;
  expected.rpn.nms_thresh = 0.61;
  expected.rpn.fg_iou_thresh = 0.62;
  expected.rpn.bg_iou_thresh = 0.21;
  expected.rpn.batch_size_per_image = 15;
  expected.rpn.positive_fraction = 0.41;
  expected.rpn.score_thresh = 0.01;
  expected.roi_heads.num_classes = 3;
  expected.roi_heads.batch_size_per_image = 16;
  expected.roi_heads.positive_fraction = 0.42;
  expected.roi_heads.fg_iou_thresh = 0.63;
  expected.roi_heads.bg_iou_thresh = 0.22;
  expected.roi_heads.score_thresh = 0.02;
  expected.roi_heads.nms_thresh = 0.43;
  expected.roi_heads.detections_per_image = 17;
  expected.roi_heads.box_pooler_resolution = 5;
  expected.roi_heads.box_pooler_sampling_ratio = 0;
  expected.roi_heads.box_fc_dim = 18;
  expected.roi_heads.bbox_reg_weights = {1, 2, 3, 4};
  expected.roi_heads.mask_on = false;
  expected.roi_heads.mask_pooler_resolution = 6;
  expected.roi_heads.mask_pooler_sampling_ratio = 3;
  expected.roi_heads.mask_conv_dim = 19;
  expected.roi_heads.mask_num_conv = 1;
  expected.transform.min_size_train = {100, 110};
  expected.transform.max_size_train = 200;
  expected.transform.min_size_test = 120;
  expected.transform.max_size_test = 210;
  expected.transform.pixel_mean = {0.1, 0.2, 0.3};
  expected.transform.pixel_std = {0.4, 0.5, 0.6};
  expected.transform.size_divisible = 16;
  expected.compute.mixed_precision = modeling::MixedPrecision::kBFloat16;
  expected.compute.channels_last = true;
  expect_same_options(to_model_options(c), expected);
}

Config load(const std::string& name) {
  Config c = maskrcnn_defaults();
  c.merge_from_file(kSourceDir + "/configs/" + name);
  return c;
}

TEST(ConfigMaskRcnn, CocoConfigIsTorchvisionsModelWithTheOneXSchedule) {
  const Config c = load("mask_rcnn_R_50_FPN_coco.yaml");
  expect_same_options(to_model_options(c), modeling::MaskRcnnOptions{});
  EXPECT_EQ(c.get<int64_t>("SOLVER.IMS_PER_BATCH"), 16);
  EXPECT_EQ(c.get<double>("SOLVER.BASE_LR"), 0.02);
  EXPECT_EQ(c.get<int64_t>("SOLVER.MAX_ITER"), 90000);
  EXPECT_THAT(c.get<IntList>("SOLVER.STEPS"), ElementsAre(60000, 80000));
  EXPECT_FALSE(c.get<std::string>("DATASETS.TRAIN_ANNOTATIONS").empty());
  EXPECT_FALSE(c.get<std::string>("DATASETS.TEST_IMAGES").empty());
}

TEST(ConfigMaskRcnn, CpuShapesConfigIsSmallAndMatchesTheShapesDataset) {
  const Config c = load("mask_rcnn_R_18_FPN_cpu_shapes.yaml");
  const modeling::MaskRcnnOptions o = to_model_options(c);
  EXPECT_EQ(o.backbone.depth, 18);
  EXPECT_EQ(o.backbone.trainable_layers, 5);
  EXPECT_FALSE(o.backbone.frozen_batch_norm) << "trained from scratch: ordinary BatchNorm";
  EXPECT_TRUE(o.backbone.synchronized_batch_norm) << "statistics over all ranks' images";
  EXPECT_EQ(o.backbone.fpn_out_channels, 64);
  EXPECT_EQ(o.rpn.anchor_sizes, (FloatListList{{8}, {16}, {32}, {64}, {128}}));
  EXPECT_EQ(o.rpn.pre_nms_top_n_train, 600);
  EXPECT_EQ(o.rpn.pre_nms_top_n_test, 300);
  EXPECT_EQ(o.rpn.post_nms_top_n_train, 300);
  EXPECT_EQ(o.rpn.post_nms_top_n_test, 100);
  EXPECT_EQ(o.rpn.batch_size_per_image, 128);
  // Background plus one class per category of `dtrain data make-shapes`.
  EXPECT_EQ(o.roi_heads.num_classes, static_cast<int64_t>(shape_categories().size()) + 1);
  EXPECT_EQ(o.roi_heads.batch_size_per_image, 128);
  EXPECT_EQ(o.roi_heads.detections_per_image, 20);
  EXPECT_EQ(o.roi_heads.box_fc_dim, 256);
  EXPECT_EQ(o.roi_heads.mask_conv_dim, 64);
  EXPECT_EQ(o.roi_heads.mask_num_conv, 2);
  EXPECT_THAT(o.transform.min_size_train, ElementsAre(128));
  EXPECT_EQ(o.transform.max_size_train, 192);
  EXPECT_EQ(o.transform.min_size_test, 128);
  EXPECT_EQ(o.transform.max_size_test, 192);
  EXPECT_EQ(c.get<int64_t>("SOLVER.IMS_PER_BATCH"), 4);
  EXPECT_EQ(c.get<double>("SOLVER.BASE_LR"), 0.04);
  EXPECT_EQ(c.get<int64_t>("SOLVER.MAX_ITER"), 3000);
  EXPECT_THAT(c.get<IntList>("SOLVER.STEPS"), ElementsAre(2400, 2775));
  EXPECT_EQ(c.get<std::string>("SOLVER.LR_SCHEDULER_NAME"), "WarmupMultiStepLR");
  // float32: bfloat16 autocast is many times slower on CPUs without bfloat16 instructions.
  EXPECT_FALSE(c.get<bool>("SOLVER.AMP.ENABLED"));
  EXPECT_EQ(c.get<std::string>("SOLVER.AMP.DTYPE"), "bfloat16");
  EXPECT_EQ(o.compute.mixed_precision, modeling::MixedPrecision::kOff);
  EXPECT_EQ(c.get<int64_t>("SOLVER.WARMUP_ITERS"), 100);
  EXPECT_TRUE(c.get<bool>("SOLVER.CLIP_GRADIENTS.ENABLED"));
  EXPECT_EQ(c.get<std::string>("SOLVER.CLIP_GRADIENTS.CLIP_TYPE"), "norm");
  EXPECT_EQ(c.get<double>("SOLVER.CLIP_GRADIENTS.CLIP_VALUE"), 5.0);
  EXPECT_EQ(c.get<int64_t>("SOLVER.CHECKPOINT_PERIOD"), 1000);
  EXPECT_EQ(c.get<int64_t>("SOLVER.LOG_PERIOD"), 50);
  EXPECT_EQ(c.get<int64_t>("DATALOADER.NUM_WORKERS"), 1);
}

TEST(ConfigMaskRcnn, DumpOfALoadedConfigReadsBackEqual) {
  const Config loaded = load("mask_rcnn_R_18_FPN_cpu_shapes.yaml");
  const testing::TempFiles files;
  Config read = maskrcnn_defaults();
  read.merge_from_file(files.write("dump.yaml", loaded.dump()));
  EXPECT_TRUE(read == loaded) << read.dump();
}

std::string validation_error(const std::vector<std::string>& overrides) {
  Config c = maskrcnn_defaults();
  c.merge_from_list(overrides);
  try {
    to_model_options(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(ConfigMaskRcnn, ValidationNamesTheKeyAndTheRule) {
  EXPECT_EQ(validation_error({"MODEL.RESNETS.DEPTH", "152"}),
            "MODEL.RESNETS.DEPTH must be one of 18, 34, 50, 101, got 152");
  EXPECT_EQ(validation_error({"MODEL.RESNETS.TRAINABLE_LAYERS", "6"}),
            "MODEL.RESNETS.TRAINABLE_LAYERS must lie in 0..5, got 6");
  EXPECT_EQ(validation_error({"MODEL.RESNETS.NORM", "GN"}),
            "MODEL.RESNETS.NORM must be FrozenBN, BN or SyncBN, got 'GN'");
  EXPECT_EQ(validation_error({"MODEL.RPN.NMS_THRESH", "1.5"}), "MODEL.RPN.NMS_THRESH must lie in [0, 1], got 1.5");
  EXPECT_EQ(validation_error({"MODEL.ROI_HEADS.SCORE_THRESH_TEST", "-0.1"}),
            "MODEL.ROI_HEADS.SCORE_THRESH_TEST must lie in [0, 1], got -0.1");
  EXPECT_EQ(validation_error({"MODEL.RPN.BG_IOU_THRESH", "0.8"}),
            "MODEL.RPN.BG_IOU_THRESH (0.8) must not exceed MODEL.RPN.FG_IOU_THRESH (0.7)");
  EXPECT_EQ(validation_error({"MODEL.ROI_HEADS.FG_IOU_THRESH", "0.4"}),
            "MODEL.ROI_HEADS.BG_IOU_THRESH (0.5) must not exceed MODEL.ROI_HEADS.FG_IOU_THRESH (0.4)");
  EXPECT_EQ(validation_error({"MODEL.RPN.POST_NMS_TOPK_TEST", "0"}),
            "MODEL.RPN.POST_NMS_TOPK_TEST must be positive, got 0");
  EXPECT_EQ(validation_error({"MODEL.ROI_MASK_HEAD.NUM_CONV", "-1"}),
            "MODEL.ROI_MASK_HEAD.NUM_CONV must be positive, got -1");
  EXPECT_EQ(validation_error({"MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO", "-1"}),
            "MODEL.ROI_BOX_HEAD.POOLER_SAMPLING_RATIO must be 0 (adaptive) or positive, got -1");
  EXPECT_EQ(validation_error({"MODEL.ROI_HEADS.NUM_CLASSES", "1"}),
            "MODEL.ROI_HEADS.NUM_CLASSES counts the background too and must be at least 2, got 1");
  EXPECT_EQ(validation_error({"MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS", "[[1], [1]]"}),
            "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS must have one list for all levels or one per level (5), got 2");
  EXPECT_EQ(validation_error({"MODEL.ANCHOR_GENERATOR.SIZES", "[[32], [64]]"}),
            "MODEL.ANCHOR_GENERATOR.SIZES must have one list per FPN level (5), got 2");
  EXPECT_THAT(validation_error({"MODEL.ANCHOR_GENERATOR.SIZES", "[[32], [64], [], [256], [512]]"}),
              HasSubstr("MODEL.ANCHOR_GENERATOR.SIZES must hold non-empty lists of positive values"));
  EXPECT_THAT(validation_error({"MODEL.ANCHOR_GENERATOR.SIZES", "[[32, 40], [64], [128], [256], [512]]"}),
              HasSubstr("as many anchors per location"));
  EXPECT_EQ(validation_error({"MODEL.PIXEL_MEAN", "[0.5, 0.5]"}),
            "MODEL.PIXEL_MEAN must have 3 values (R, G, B), got 2");
  EXPECT_EQ(validation_error({"MODEL.PIXEL_STD", "[0.2, 0, 0.2]"}),
            "MODEL.PIXEL_STD must be positive, got [0.2, 0.0, 0.2]");
  EXPECT_EQ(validation_error({"MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS", "[10, 10, 5]"}),
            "MODEL.ROI_BOX_HEAD.BBOX_REG_WEIGHTS must have 4 values (x, y, w, h), got 3");
  EXPECT_EQ(validation_error({"INPUT.MIN_SIZE_TRAIN", "[]"}),
            "INPUT.MIN_SIZE_TRAIN must hold one or more positive sizes, got []");
  EXPECT_EQ(validation_error({"INPUT.SIZE_DIVISIBILITY", "0"}), "INPUT.SIZE_DIVISIBILITY must be positive, got 0");
  EXPECT_EQ(validation_error({"SOLVER.AMP.DTYPE", "float8"}),
            "SOLVER.AMP.DTYPE must be float16 or bfloat16, got 'float8'");
  EXPECT_EQ(
      validation_error({"SOLVER.AMP.ENABLED", "true", "SOLVER.AMP.DTYPE", "bfloat16", "MODEL.PRECISION", "float64"}),
      "SOLVER.AMP.ENABLED needs MODEL.PRECISION float32 (autocast leaves float64 as it is)");
  // float16 on the CPU is the trainer's refusal (and inference's fallback), not the config's.
  EXPECT_EQ(validation_error({"SOLVER.AMP.ENABLED", "true"}), "(no ConfigError)");
  EXPECT_EQ(validation_error({"MODEL.META_ARCHITECTURE", "RetinaNet"}),
            "MODEL.META_ARCHITECTURE must be GeneralizedRCNN (the only one built), got 'RetinaNet'");
}

TEST(ConfigMaskRcnn, DocsListEveryKeyWithItsDefault) {
  std::ifstream in(kSourceDir + "/docs/config.md");
  ASSERT_TRUE(in) << "docs/config.md is missing";
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const Config defaults = maskrcnn_defaults();
  for (const std::string& key : defaults.keys()) {
    const std::string row = "| `" + key + "` | `" + format_value(defaults.value(key)) + "` |";
    EXPECT_NE(doc.find(row), std::string::npos) << "docs/config.md needs the row " << row << " ... |";
  }
}

}  // namespace
}  // namespace dtrain::vision::config
