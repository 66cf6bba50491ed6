// `dtrain-maskrcnn train` run as a user runs it: two ranks under `dtrain run`
// on a generated shapes dataset, a few iterations of the CPU config.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <string>

#include "command_runner.h"
#include "temp_dir.h"

namespace dtrain::maskrcnn {
namespace {

namespace fs = std::filesystem;
using dtrain::testing::JobResult;
using dtrain::testing::run_job;
using dtrain::testing::TempDir;

class TrainCli : public ::testing::Test {
 protected:
  void SetUp() override {
    const JobResult made = run_job(std::string(DTRAIN_CLI) + " data make-shapes --out " + dir_.path().string() +
                                   "/shapes --train 8 --val 2 --size 96 --seed 3 --threads 1");
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }

  // Two ranks, one thread each, the given extra overrides.
  JobResult train(const std::string& extra, int ranks = 2) {
    const std::string shapes = dir_.path().string() + "/shapes";
    return run_job(std::string(DTRAIN_CLI) + " run -np " + std::to_string(ranks) + " -- " + DTRAIN_MASKRCNN +
                       " train --threads 1 --config-file " + SHAPES_CONFIG + " DATASETS.TRAIN_ANNOTATIONS " + shapes +
                       "/annotations/instances_train.json DATASETS.TRAIN_IMAGES " + shapes +
                       "/train INPUT.MIN_SIZE_TRAIN 96 INPUT.MAX_SIZE_TRAIN 128 OUTPUT_DIR " + output() + " " + extra,
                   240);
  }
  std::string output() const { return dir_.path().string() + "/out"; }

  TempDir dir_;
};

TEST_F(TrainCli, TwoRanksTrainLogEveryPeriodAndRankZeroWritesCheckpointsAndTheFinalModel) {
  const JobResult run = train(
      "SOLVER.MAX_ITER 4 SOLVER.IMS_PER_BATCH 2 SOLVER.LOG_PERIOD 2 SOLVER.CHECKPOINT_PERIOD 2 SOLVER.WARMUP_ITERS 2");
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("Training Mask R-CNN on 2 rank(s): 2 images per step (1 per rank), 4 iterations"),
            std::string::npos)
      << run.output;
  // The documented progress line, once per period, from rank 0 only.
  const std::regex line(
      R"(\[0\]<stdout>:iter: (\d+)/4  loss_box_reg: [0-9.]+  loss_classifier: [0-9.]+  loss_mask: [0-9.]+  )"
      R"(loss_objectness: [0-9.]+  loss_rpn_box_reg: [0-9.]+  total_loss: [0-9.]+  lr: [0-9.e-]+  )"
      R"(images/s: [0-9.]+  eta: \d+ s)");
  std::vector<std::string> iterations;
  for (std::sregex_iterator it(run.output.begin(), run.output.end(), line), end; it != end; ++it) {
    iterations.push_back((*it)[1]);
  }
  EXPECT_EQ(iterations, (std::vector<std::string>{"2", "4"})) << run.output;
  EXPECT_EQ(run.output.find("[1]<stdout>:iter"), std::string::npos) << "only rank 0 logs";
  EXPECT_TRUE(fs::exists(output() + "/model_0000002.pth"));
  EXPECT_TRUE(fs::exists(output() + "/model_final.pth"));
  EXPECT_FALSE(fs::exists(output() + "/model_0000004.pth")) << "the last iteration is the final model";

  // The final model is what predict loads.
  const JobResult predicted =
      run_job(std::string(DTRAIN_MASKRCNN) + " predict --threads 1 --config-file " + SHAPES_CONFIG + " --weights " +
              output() + "/model_final.pth --input " + dir_.path().string() + "/shapes/val --output " +
              dir_.path().string() + "/predictions");
  EXPECT_EQ(predicted.exit_code, 0) << predicted.output;
}

TEST_F(TrainCli, ABatchThatDoesNotSplitEvenlyOverTheRanksIsRefusedOnEveryRank) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 3");
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("SOLVER.IMS_PER_BATCH 3 must be a positive multiple of the number of ranks (2)"),
            std::string::npos)
      << run.output;
}

TEST_F(TrainCli, AClassCountThatDisagreesWithTheDatasetIsRefused) {
  const JobResult run = train("SOLVER.MAX_ITER 2 SOLVER.IMS_PER_BATCH 2 MODEL.ROI_HEADS.NUM_CLASSES 7", 1);
  EXPECT_NE(run.exit_code, 0);
  EXPECT_NE(run.output.find("3 categories, but MODEL.ROI_HEADS.NUM_CLASSES is 7"), std::string::npos) << run.output;
}

TEST_F(TrainCli, AnUnknownConfigKeyIsAUsageError) {
  const JobResult run = run_job(std::string(DTRAIN_MASKRCNN) + " train --config-file " + SHAPES_CONFIG +
                                " SOLVER.MAX_ITERS 5");
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_NE(run.output.find("SOLVER.MAX_ITERS"), std::string::npos) << run.output;
}

}  // namespace
}  // namespace dtrain::maskrcnn
