// merge_from_list: Detectron2-style trailing KEY VALUE overrides.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "vision/config/config.h"
#include "vision/config/maskrcnn_defaults.h"

namespace dtrain::vision::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string override_error(Config& c, const std::vector<std::string>& pairs) {
  try {
    c.merge_from_list(pairs);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(ConfigOverrides, ScalarsOfEveryType) {
  Config c = maskrcnn_defaults();
  c.merge_from_list({"SOLVER.MAX_ITER", "20000", "MODEL.RESNETS.DEPTH", "18", "SOLVER.BASE_LR", "0.0025",
                     "SOLVER.WEIGHT_DECAY", "1e-5", "SOLVER.GAMMA", "1", "MODEL.MASK_ON", "False",
                     "DATALOADER.ASPECT_RATIO_GROUPING", "false", "SEED", "-7", "MODEL.RESNETS.NORM", "BN"});
  EXPECT_EQ(c.get<int64_t>("SOLVER.MAX_ITER"), 20000);
  EXPECT_EQ(c.get<int64_t>("MODEL.RESNETS.DEPTH"), 18);
  EXPECT_EQ(c.get<double>("SOLVER.BASE_LR"), 0.0025);
  EXPECT_EQ(c.get<double>("SOLVER.WEIGHT_DECAY"), 1e-5);
  EXPECT_EQ(c.get<double>("SOLVER.GAMMA"), 1.0);
  EXPECT_FALSE(c.get<bool>("MODEL.MASK_ON"));
  EXPECT_FALSE(c.get<bool>("DATALOADER.ASPECT_RATIO_GROUPING"));
  EXPECT_EQ(c.get<int64_t>("SEED"), -7);
  EXPECT_EQ(c.get<std::string>("MODEL.RESNETS.NORM"), "BN");
  c.merge_from_list({"MODEL.MASK_ON", "True"});
  EXPECT_TRUE(c.get<bool>("MODEL.MASK_ON"));
}

TEST(ConfigOverrides, ListsInYamlOrPythonTupleSyntax) {
  Config c = maskrcnn_defaults();
  c.merge_from_list({"MODEL.ANCHOR_GENERATOR.SIZES", "[[16], [32], [64], [128], [256]]", "INPUT.MIN_SIZE_TRAIN",
                     "(640, 672, 704)", "SOLVER.STEPS", "(1000,)", "MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS",
                     "((0.25, 1, 4),)", "MODEL.PIXEL_MEAN", "[0.5, 0.5, 0.5]"});
  EXPECT_EQ(c.get<FloatListList>("MODEL.ANCHOR_GENERATOR.SIZES"), (FloatListList{{16}, {32}, {64}, {128}, {256}}));
  EXPECT_THAT(c.get<IntList>("INPUT.MIN_SIZE_TRAIN"), ElementsAre(640, 672, 704));
  EXPECT_THAT(c.get<IntList>("SOLVER.STEPS"), ElementsAre(1000));
  EXPECT_EQ(c.get<FloatListList>("MODEL.ANCHOR_GENERATOR.ASPECT_RATIOS"), (FloatListList{{0.25, 1.0, 4.0}}));
  EXPECT_THAT(c.get<FloatList>("MODEL.PIXEL_MEAN"), ElementsAre(0.5, 0.5, 0.5));

  // A lone value is a list of one; an empty list is a list.
  c.merge_from_list({"INPUT.MIN_SIZE_TRAIN", "800", "SOLVER.STEPS", "[]"});
  EXPECT_THAT(c.get<IntList>("INPUT.MIN_SIZE_TRAIN"), ElementsAre(800));
  EXPECT_TRUE(c.get<IntList>("SOLVER.STEPS").empty());
}

TEST(ConfigOverrides, StringsAreTakenAsTypedUnlessQuoted) {
  Config c = maskrcnn_defaults();
  c.merge_from_list({"OUTPUT_DIR", "runs/a b: c", "MODEL.WEIGHTS", "", "DATASETS.TRAIN_IMAGES", "'(quoted)'",
                     "DATASETS.TEST_IMAGES", "123"});
  EXPECT_EQ(c.get<std::string>("OUTPUT_DIR"), "runs/a b: c");
  EXPECT_EQ(c.get<std::string>("MODEL.WEIGHTS"), "");
  EXPECT_EQ(c.get<std::string>("DATASETS.TRAIN_IMAGES"), "(quoted)");
  EXPECT_EQ(c.get<std::string>("DATASETS.TEST_IMAGES"), "123");
}

TEST(ConfigOverrides, LaterPairWins) {
  Config c = maskrcnn_defaults();
  c.merge_from_list({"SOLVER.MAX_ITER", "1", "SOLVER.MAX_ITER", "2"});
  EXPECT_EQ(c.get<int64_t>("SOLVER.MAX_ITER"), 2);
}

TEST(ConfigOverrides, OddCountNamesTheKeyWithoutAValue) {
  Config c = maskrcnn_defaults();
  EXPECT_EQ(override_error(c, {"SOLVER.MAX_ITER", "20000", "MODEL.RESNETS.DEPTH"}),
            "overrides come in KEY VALUE pairs, got an odd number of items (3): the last one, "
            "'MODEL.RESNETS.DEPTH', has no value");
  EXPECT_EQ(override_error(c, {"SOLVER.MAX_ITER", "MODEL.RESNETS.DEPTH", "18"}),
            "overrides come in KEY VALUE pairs, got an odd number of items (3): SOLVER.MAX_ITER has no value "
            "(it is followed by the key MODEL.RESNETS.DEPTH)");
  EXPECT_TRUE(c == maskrcnn_defaults());
}

TEST(ConfigOverrides, UnknownKeyIsNamedWithASuggestion) {
  Config c = maskrcnn_defaults();
  EXPECT_EQ(override_error(c, {"SOLVER.MAX_ITER", "5", "MODEL.RPN.NMS_THRESHOLD", "0.5"}),
            "unknown config key 'MODEL.RPN.NMS_THRESHOLD' in the overrides (did you mean MODEL.RPN.NMS_THRESH?)");
  EXPECT_EQ(override_error(c, {"solver.max_iter", "5"}),
            "unknown config key 'solver.max_iter' in the overrides (did you mean SOLVER.MAX_ITER?)");
  EXPECT_EQ(override_error(c, {"MODEL.DETECTIONS_PER_IMAGE", "5"}),
            "unknown config key 'MODEL.DETECTIONS_PER_IMAGE' in the overrides "
            "(did you mean MODEL.ROI_HEADS.DETECTIONS_PER_IMAGE?)");
  EXPECT_THAT(override_error(c, {"MODEL.RPN", "5"}), HasSubstr("MODEL.RPN is a group of keys"));
  // All or nothing: SOLVER.MAX_ITER 5 came first but did not stick.
  EXPECT_TRUE(c == maskrcnn_defaults());
}

TEST(ConfigOverrides, WrongTypeNamesKeyAndValue) {
  Config c = maskrcnn_defaults();
  EXPECT_EQ(override_error(c, {"MODEL.RESNETS.DEPTH", "fifty"}),
            "MODEL.RESNETS.DEPTH expects an integer, got 'fifty' in the overrides");
  EXPECT_EQ(override_error(c, {"SOLVER.MAX_ITER", "1.5"}),
            "SOLVER.MAX_ITER expects an integer, got '1.5' in the overrides");
  EXPECT_EQ(override_error(c, {"MODEL.MASK_ON", "1"}),
            "MODEL.MASK_ON expects a boolean (true or false), got '1' in the overrides");
  EXPECT_EQ(override_error(c, {"INPUT.MIN_SIZE_TRAIN", "(640, big)"}),
            "INPUT.MIN_SIZE_TRAIN expects a list of integers, got '(640, big)' in the overrides");
  EXPECT_EQ(override_error(c, {"MODEL.ANCHOR_GENERATOR.SIZES", "[32, 64]"}),
            "MODEL.ANCHOR_GENERATOR.SIZES expects a list of lists of floats, got '[32, 64]' in the overrides");
  EXPECT_THAT(override_error(c, {"MODEL.PIXEL_MEAN", "[0.1, 0.2"}),
              HasSubstr("MODEL.PIXEL_MEAN expects a list of floats, got '[0.1, 0.2' (not a YAML value: "));
  EXPECT_EQ(override_error(c, {"SOLVER.BASE_LR", ""}), "SOLVER.BASE_LR expects a float, got '' in the overrides");
  EXPECT_EQ(override_error(c, {"SOLVER.BASE_LR", "nan"}), "SOLVER.BASE_LR expects a float, got 'nan' in the overrides");
}

}  // namespace
}  // namespace dtrain::vision::config
