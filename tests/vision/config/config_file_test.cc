// merge_from_file: nested YAML, _BASE_ chains, and the one-line errors that
// name the key, the file and the line.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/vision/config/temp_files.h"
#include "vision/config/config.h"
#include "vision/config/maskrcnn_defaults.h"

namespace dtrain::vision::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::TempFiles;

std::string merge_error(Config& c, const std::string& path) {
  try {
    c.merge_from_file(path);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(ConfigFile, MergesNestedAndDottedKeysAndLeavesTheRest) {
  const TempFiles files;
  const std::string path = files.write("x.yaml",
                                       "MODEL:\n"
                                       "  RESNETS:\n"
                                       "    DEPTH: 18\n"
                                       "  RPN.NMS_THRESH: 0.6\n"
                                       "  MASK_ON: False\n"
                                       "  ANCHOR_GENERATOR:\n"
                                       "    SIZES: [[8], [16], [32], [64], [128]]\n"
                                       "INPUT:\n"
                                       "  MIN_SIZE_TRAIN: [640, 672]\n"
                                       "SOLVER:\n"
                                       "  BASE_LR: 1\n"
                                       "OUTPUT_DIR: runs/x  # a comment\n");
  Config c = maskrcnn_defaults();
  c.merge_from_file(path);
  EXPECT_EQ(c.get<int64_t>("MODEL.RESNETS.DEPTH"), 18);
  EXPECT_EQ(c.get<double>("MODEL.RPN.NMS_THRESH"), 0.6);
  EXPECT_FALSE(c.get<bool>("MODEL.MASK_ON"));
  EXPECT_EQ(c.get<FloatListList>("MODEL.ANCHOR_GENERATOR.SIZES"), (FloatListList{{8}, {16}, {32}, {64}, {128}}));
  EXPECT_THAT(c.get<IntList>("INPUT.MIN_SIZE_TRAIN"), ElementsAre(640, 672));
  EXPECT_EQ(c.get<double>("SOLVER.BASE_LR"), 1.0);  // an integer is a float
  EXPECT_EQ(c.get<std::string>("OUTPUT_DIR"), "runs/x");
  // Untouched keys keep their defaults.
  EXPECT_EQ(c.get<int64_t>("MODEL.RESNETS.TRAINABLE_LAYERS"), 3);
  EXPECT_EQ(c.get<double>("MODEL.RPN.FG_IOU_THRESH"), 0.7);
}

TEST(ConfigFile, EmptyFileChangesNothing) {
  const TempFiles files;
  Config c = maskrcnn_defaults();
  c.merge_from_file(files.write("empty.yaml", "# nothing here\n"));
  EXPECT_TRUE(c == maskrcnn_defaults());
}

TEST(ConfigFile, BaseIsMergedFirstRelativeToTheIncludingFile) {
  const TempFiles files;
  files.write("common/Base.yaml", "MODEL:\n  RESNETS: {DEPTH: 101, TRAINABLE_LAYERS: 5}\nSOLVER: {MAX_ITER: 100}\n");
  files.write("common/Middle.yaml", "_BASE_: \"Base.yaml\"\nSOLVER: {MAX_ITER: 200, BASE_LR: 0.5}\n");
  const std::string top = files.write("exp/top.yaml", "_BASE_: ../common/Middle.yaml\nSOLVER:\n  MAX_ITER: 300\n");
  Config c = maskrcnn_defaults();
  c.merge_from_file(top);
  EXPECT_EQ(c.get<int64_t>("MODEL.RESNETS.DEPTH"), 101);  // from Base
  EXPECT_EQ(c.get<int64_t>("MODEL.RESNETS.TRAINABLE_LAYERS"), 5);
  EXPECT_EQ(c.get<double>("SOLVER.BASE_LR"), 0.5);    // from Middle
  EXPECT_EQ(c.get<int64_t>("SOLVER.MAX_ITER"), 300);  // the including file wins
}

TEST(ConfigFile, BaseCycleIsAnErrorNamingTheFiles) {
  const TempFiles files;
  files.write("a.yaml", "_BASE_: b.yaml\nSEED: 1\n");
  files.write("b.yaml", "_BASE_: a.yaml\nSEED: 2\n");
  Config c = maskrcnn_defaults();
  const std::string error = merge_error(c, files.path("a.yaml"));
  EXPECT_THAT(error, HasSubstr("_BASE_ cycle: "));
  EXPECT_THAT(error, HasSubstr("a.yaml -> "));
  EXPECT_THAT(error, HasSubstr("b.yaml -> "));
  EXPECT_EQ(c.get<int64_t>("SEED"), -1);

  files.write("self.yaml", "_BASE_: ./self.yaml\n");
  EXPECT_THAT(merge_error(c, files.path("self.yaml")), HasSubstr("_BASE_ cycle"));
}

TEST(ConfigFile, MergingAChainAgainIsNoCycle) {
  const TempFiles files;
  files.write("base.yaml", "SEED: 7\n");
  files.write("mid.yaml", "_BASE_: base.yaml\n");
  Config c = maskrcnn_defaults();
  c.merge_from_file(files.write("top.yaml", "_BASE_: mid.yaml\n"));
  c.merge_from_file(files.path("mid.yaml"));
  EXPECT_EQ(c.get<int64_t>("SEED"), 7);
}

TEST(ConfigFile, UnknownKeyNamesKeyFileLineAndSuggestion) {
  const TempFiles files;
  const std::string path = files.write("x.yaml",
                                       "MODEL:\n"
                                       "  RPN:\n"
                                       "    NMS_THRESH: 0.6\n"
                                       "    NMS_THRESHOLD: 0.5\n");
  Config c = maskrcnn_defaults();
  EXPECT_EQ(merge_error(c, path),
            "unknown config key 'MODEL.RPN.NMS_THRESHOLD' in " + path + ":4 (did you mean MODEL.RPN.NMS_THRESH?)");
  // All or nothing: the valid line before it did not stick.
  EXPECT_EQ(c.get<double>("MODEL.RPN.NMS_THRESH"), 0.7);
}

TEST(ConfigFile, MisspeltGroupIsReportedByItsFullKey) {
  const TempFiles files;
  const std::string path = files.write("x.yaml", "MODEL:\n  RPNN:\n    NMS_THRESH: 0.6\n");
  Config c = maskrcnn_defaults();
  EXPECT_EQ(merge_error(c, path),
            "unknown config key 'MODEL.RPNN.NMS_THRESH' in " + path + ":3 (did you mean MODEL.RPN.NMS_THRESH?)");
  const std::string unrelated = files.write("y.yaml", "TOTALLY_NEW: 1\n");
  EXPECT_EQ(merge_error(c, unrelated), "unknown config key 'TOTALLY_NEW' in " + unrelated + ":1");
}

TEST(ConfigFile, WrongTypeNamesKeyValueFileAndLine) {
  const TempFiles files;
  Config c = maskrcnn_defaults();
  const std::string depth = files.write("depth.yaml", "MODEL:\n  RESNETS:\n    DEPTH: fifty\n");
  EXPECT_EQ(merge_error(c, depth), "MODEL.RESNETS.DEPTH expects an integer, got 'fifty' in " + depth + ":3");

  const std::string quoted = files.write("quoted.yaml", "SOLVER:\n  MAX_ITER: \"300\"\n");
  EXPECT_EQ(merge_error(c, quoted), "SOLVER.MAX_ITER expects an integer, got the string \"300\" in " + quoted + ":2");

  const std::string truncated = files.write("float.yaml", "SOLVER:\n  MAX_ITER: 1.5\n");
  EXPECT_THAT(merge_error(c, truncated), HasSubstr("SOLVER.MAX_ITER expects an integer, got '1.5'"));

  const std::string boolean = files.write("bool.yaml", "MODEL:\n  MASK_ON: yes\n");
  EXPECT_THAT(merge_error(c, boolean), HasSubstr("MODEL.MASK_ON expects a boolean (true or false), got 'yes'"));

  const std::string nested = files.write("nested.yaml", "MODEL:\n  ANCHOR_GENERATOR:\n    SIZES: [32, 64]\n");
  EXPECT_EQ(merge_error(c, nested),
            "MODEL.ANCHOR_GENERATOR.SIZES expects a list of lists of floats, got [32, 64] in " + nested + ":3");

  const std::string empty = files.write("empty.yaml", "MODEL:\n  RESNETS:\n    DEPTH:\n");
  EXPECT_THAT(merge_error(c, empty), HasSubstr("MODEL.RESNETS.DEPTH expects an integer, got nothing"));

  const std::string group = files.write("group.yaml", "MODEL:\n  RPN: 5\n");
  EXPECT_EQ(merge_error(c, group), "MODEL.RPN is a group of keys, not a value; got '5' in " + group + ":2");
  EXPECT_TRUE(c == maskrcnn_defaults());
}

TEST(ConfigFile, KeyGivenTwiceInOneFileIsAnError) {
  const TempFiles files;
  Config c = maskrcnn_defaults();
  const std::string leaf = files.write("leaf.yaml", "SEED: 1\nOUTPUT_DIR: x\nSEED: 2\n");
  EXPECT_EQ(merge_error(c, leaf), "config key 'SEED' is given twice in " + leaf + ":3");
  const std::string group = files.write("group.yaml", "SOLVER:\n  MAX_ITER: 1\nSOLVER:\n  BASE_LR: 2\n");
  EXPECT_EQ(merge_error(c, group), "config key 'SOLVER' is given twice in " + group + ":3");
}

TEST(ConfigFile, MissingOrInvalidFilesAreNamed) {
  const TempFiles files;
  Config c = maskrcnn_defaults();
  const std::string missing = files.path("nope.yaml");
  EXPECT_EQ(merge_error(c, missing), "cannot read config file " + missing + ": No such file or directory");

  const std::string bad = files.write("bad.yaml", "MODEL:\n  RPN: {NMS_THRESH: 0.5\nSEED: 1\n");
  EXPECT_THAT(merge_error(c, bad), HasSubstr("invalid YAML in " + bad + ":"));

  const std::string list = files.write("list.yaml", "- MODEL\n- SOLVER\n");
  EXPECT_THAT(merge_error(c, list), HasSubstr("config file " + list + " must hold a mapping of keys"));

  files.write("missing_base.yaml", "_BASE_: gone.yaml\n");
  EXPECT_THAT(merge_error(c, files.path("missing_base.yaml")),
              HasSubstr("cannot read config file " + files.path("gone.yaml")));

  const std::string bad_base = files.write("bad_base.yaml", "_BASE_: [a.yaml]\n");
  EXPECT_EQ(merge_error(c, bad_base), "_BASE_ expects the path of a YAML file, got [a.yaml] in " + bad_base + ":1");
  EXPECT_TRUE(c == maskrcnn_defaults());
}

}  // namespace
}  // namespace dtrain::vision::config
