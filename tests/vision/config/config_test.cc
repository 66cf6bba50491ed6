// The config tree itself: defining keys, typed get and set, dump().
#include "vision/config/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/vision/config/temp_files.h"

namespace dtrain::vision::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A small schema with one key of every type, groups interleaved on purpose.
Config small_config() {
  Config c;
  c.define("MODEL.DEPTH", int64_t{50});
  c.define("MODEL.RPN.NMS_THRESH", 0.7);
  c.define("SOLVER.STEPS", IntList{60000, 80000});
  c.define("MODEL.MASK_ON", true);
  c.define("MODEL.NAME", std::string("GeneralizedRCNN"));
  c.define("MODEL.MEAN", FloatList{0.485, 0.456, 0.406});
  c.define("MODEL.SIZES", FloatListList{{32}, {64}});
  c.define("DATASETS.TRAIN", StringList{"coco_train"});
  c.define("SEED", int64_t{-1});
  return c;
}

template <typename Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Config, GetReturnsDefaultsOfEveryType) {
  const Config c = small_config();
  EXPECT_EQ(c.get<int64_t>("MODEL.DEPTH"), 50);
  EXPECT_EQ(c.get<double>("MODEL.RPN.NMS_THRESH"), 0.7);
  EXPECT_THAT(c.get<IntList>("SOLVER.STEPS"), ElementsAre(60000, 80000));
  EXPECT_TRUE(c.get<bool>("MODEL.MASK_ON"));
  EXPECT_EQ(c.get<std::string>("MODEL.NAME"), "GeneralizedRCNN");
  EXPECT_THAT(c.get<FloatList>("MODEL.MEAN"), ElementsAre(0.485, 0.456, 0.406));
  EXPECT_EQ(c.get<FloatListList>("MODEL.SIZES"), (FloatListList{{32}, {64}}));
  EXPECT_THAT(c.get<StringList>("DATASETS.TRAIN"), ElementsAre("coco_train"));
  EXPECT_EQ(c.get<int64_t>("SEED"), -1);
  EXPECT_EQ(c.type("MODEL.SIZES"), ValueType::kFloatListList);
}

TEST(Config, KeysComeInDefinitionOrderAndByGroup) {
  const Config c = small_config();
  EXPECT_THAT(c.keys(), ElementsAre("MODEL.DEPTH", "MODEL.RPN.NMS_THRESH", "SOLVER.STEPS", "MODEL.MASK_ON",
                                    "MODEL.NAME", "MODEL.MEAN", "MODEL.SIZES", "DATASETS.TRAIN", "SEED"));
  EXPECT_THAT(c.keys("MODEL.RPN"), ElementsAre("MODEL.RPN.NMS_THRESH"));
  EXPECT_TRUE(c.has("MODEL.DEPTH"));
  EXPECT_FALSE(c.has("MODEL"));
  EXPECT_TRUE(c.is_group("MODEL"));
  EXPECT_TRUE(c.is_group("MODEL.RPN"));
  EXPECT_FALSE(c.is_group("MODEL.RP"));
  EXPECT_FALSE(c.is_group("MODEL.DEPTH"));
}

TEST(Config, SetAcceptsAnIntegerForAFloatButNeverTheReverse) {
  Config c = small_config();
  c.set("MODEL.RPN.NMS_THRESH", 1);
  EXPECT_EQ(c.get<double>("MODEL.RPN.NMS_THRESH"), 1.0);
  c.set("MODEL.MEAN", IntList{1, 2, 3});
  EXPECT_THAT(c.get<FloatList>("MODEL.MEAN"), ElementsAre(1.0, 2.0, 3.0));
  c.set("MODEL.NAME", "Other");
  EXPECT_EQ(c.get<std::string>("MODEL.NAME"), "Other");

  EXPECT_EQ(error_of([&] { c.set("MODEL.DEPTH", 1.5); }), "MODEL.DEPTH expects an integer, got 1.5");
  EXPECT_EQ(error_of([&] { c.set("MODEL.MASK_ON", "yes"); }),
            "MODEL.MASK_ON expects a boolean (true or false), got \"yes\"");
  EXPECT_EQ(c.get<int64_t>("MODEL.DEPTH"), 50);
}

TEST(Config, GetOfAnotherTypeOrUnknownKeyThrowsNamingTheKey) {
  const Config c = small_config();
  EXPECT_EQ(error_of([&] { c.get<double>("MODEL.DEPTH"); }), "config key MODEL.DEPTH holds an integer, not a float");
  EXPECT_EQ(error_of([&] { c.get<int64_t>("MODEL.DEPTHS"); }),
            "unknown config key 'MODEL.DEPTHS' (did you mean MODEL.DEPTH?)");
}

TEST(Config, DefineRejectsDuplicatesAndValueGroupClashes) {
  Config c = small_config();
  EXPECT_THAT(error_of([&] { c.define("MODEL.DEPTH", int64_t{1}); }), HasSubstr("'MODEL.DEPTH' is defined twice"));
  EXPECT_THAT(error_of([&] { c.define("MODEL.RPN", int64_t{1}); }), HasSubstr("already a group"));
  EXPECT_THAT(error_of([&] { c.define("MODEL.DEPTH.X", int64_t{1}); }), HasSubstr("under the value 'MODEL.DEPTH'"));
  EXPECT_THAT(error_of([&] { c.define("MODEL..X", int64_t{1}); }), HasSubstr("malformed"));
  EXPECT_THAT(error_of([&] { c.define("MODEL.X Y", int64_t{1}); }), HasSubstr("malformed"));
}

TEST(Config, DumpNestsGroupsInDefinitionOrder) {
  EXPECT_EQ(small_config().dump(),
            "MODEL:\n"
            "  DEPTH: 50\n"
            "  RPN:\n"
            "    NMS_THRESH: 0.7\n"
            "  MASK_ON: true\n"
            "  NAME: \"GeneralizedRCNN\"\n"
            "  MEAN: [0.485, 0.456, 0.406]\n"
            "  SIZES: [[32.0], [64.0]]\n"
            "SOLVER:\n"
            "  STEPS: [60000, 80000]\n"
            "DATASETS:\n"
            "  TRAIN: [\"coco_train\"]\n"
            "SEED: -1\n");
}

TEST(Config, DumpReadsBackToAnEqualConfig) {
  Config changed = small_config();
  changed.set("MODEL.DEPTH", -3);
  changed.set("MODEL.RPN.NMS_THRESH", 1e-05);
  changed.set("MODEL.MASK_ON", false);
  changed.set("MODEL.NAME", "a \"quoted\" name: with\\ odd # chars\n");
  changed.set("MODEL.MEAN", FloatList{0.1, 1.0 / 3.0, 123456789.125});
  changed.set("MODEL.SIZES", FloatListList{{}, {2.5, 3}});
  changed.set("DATASETS.TRAIN", StringList{"", "true", "~", "[x]"});
  changed.set("SOLVER.STEPS", IntList{});

  const testing::TempFiles files;
  const std::string path = files.write("dump.yaml", changed.dump());
  Config read = small_config();
  ASSERT_FALSE(read == changed);
  read.merge_from_file(path);
  EXPECT_TRUE(read == changed) << changed.dump() << "\nread back as\n" << read.dump();
  EXPECT_EQ(read.get<std::string>("MODEL.NAME"), "a \"quoted\" name: with\\ odd # chars\n");
  EXPECT_EQ(read.get<FloatList>("MODEL.MEAN")[1], 1.0 / 3.0);
}

TEST(Config, FormatFloatIsShortestAndAlwaysAFloat) {
  EXPECT_EQ(format_float(0.7), "0.7");
  EXPECT_EQ(format_float(32), "32.0");
  EXPECT_EQ(format_float(0.0001), "0.0001");
  EXPECT_EQ(format_float(-2.5), "-2.5");
  EXPECT_EQ(format_float(1e-05), "1e-05");
  EXPECT_EQ(format_float(1e16), "1e+16");
  EXPECT_EQ(format_float(123456789.125), "123456789.125");
}

}  // namespace
}  // namespace dtrain::vision::config
