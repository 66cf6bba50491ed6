// The learning rate per iteration, against values worked out by hand from
// Detectron2's WarmupMultiStepLR and WarmupCosineLR definitions.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "vision/solver/lr_schedule.h"

namespace dtrain::vision::solver {
namespace {

TEST(WarmupLrSchedule, WarmsUpLinearlyThenDecaysAtEachStep) {
  WarmupLrSchedule schedule({0.02, {300, 400}, 0.1, 100, 0.001});
  EXPECT_DOUBLE_EQ(schedule.lr(0), 0.02 * 0.001);
  EXPECT_DOUBLE_EQ(schedule.lr(50), 0.02 * (0.001 * 0.5 + 0.5));
  EXPECT_DOUBLE_EQ(schedule.lr(99), 0.02 * (0.001 * 0.01 + 0.99));
  EXPECT_DOUBLE_EQ(schedule.lr(100), 0.02);
  EXPECT_DOUBLE_EQ(schedule.lr(299), 0.02);
  EXPECT_DOUBLE_EQ(schedule.lr(300), 0.02 * 0.1);  // the step's own iteration is already decayed
  EXPECT_DOUBLE_EQ(schedule.lr(399), 0.02 * 0.1);
  EXPECT_NEAR(schedule.lr(400), 0.02 * 0.01, 1e-18);
  EXPECT_NEAR(schedule.lr(100000), 0.02 * 0.01, 1e-18);
}

TEST(WarmupLrSchedule, NoWarmupAndNoStepsIsConstant) {
  WarmupLrSchedule schedule({0.5, {}, 0.1, 0, 1.0});
  EXPECT_DOUBLE_EQ(schedule.lr(0), 0.5);
  EXPECT_DOUBLE_EQ(schedule.lr(123456), 0.5);
}

TEST(WarmupLrSchedule, CosineFallsFromTheBaseRateToTheEndRateAtMaxIter) {
  LrScheduleOptions options{0.04, {}, 0.1, 100, 0.001};
  options.decay = LrDecay::kCosine;
  options.max_iter = 1000;
  options.base_lr_end = 0.001;
  WarmupLrSchedule schedule(options);
  // The warm-up scales the cosine's value, as Detectron2's WarmupParamScheduler does.
  const double cosine_at_50 = 0.001 + 0.039 * 0.5 * (1 + std::cos(std::numbers::pi * 0.05));
  EXPECT_DOUBLE_EQ(schedule.lr(50), (0.001 * 0.5 + 0.5) * cosine_at_50);
  EXPECT_DOUBLE_EQ(schedule.lr(500), 0.001 + 0.039 * 0.5);  // half way: the mean of both ends
  EXPECT_DOUBLE_EQ(schedule.lr(1000), 0.001);
  EXPECT_DOUBLE_EQ(schedule.lr(5000), 0.001);  // past the end (a longer resumed run): stays there
  EXPECT_GT(schedule.lr(700), schedule.lr(701));
}

void expect_refused(LrScheduleOptions options, const std::string& key) {
  try {
    WarmupLrSchedule schedule(options);
    ADD_FAILURE() << "expected an error naming " << key;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(WarmupLrSchedule, BadSettingsNameTheirKey) {
  expect_refused({0.0, {10}, 0.1, 5, 0.1}, "SOLVER.BASE_LR");
  expect_refused({0.1, {10, 10}, 0.1, 5, 0.1}, "SOLVER.STEPS");
  expect_refused({0.1, {20, 10}, 0.1, 5, 0.1}, "SOLVER.STEPS");
  expect_refused({0.1, {10}, 0.0, 5, 0.1}, "SOLVER.GAMMA");
  expect_refused({0.1, {10}, 0.1, -1, 0.1}, "SOLVER.WARMUP_ITERS");
  expect_refused({0.1, {10}, 0.1, 5, 0.0}, "SOLVER.WARMUP_FACTOR");
  expect_refused({0.1, {}, 0.1, 5, 0.1, LrDecay::kCosine, 0, 0.0}, "SOLVER.MAX_ITER");
  expect_refused({0.1, {}, 0.1, 5, 0.1, LrDecay::kCosine, 100, 0.2}, "SOLVER.BASE_LR_END");
}

TEST(WarmupLrSchedule, ParsesDetectron2sSchedulerNames) {
  EXPECT_EQ(parse_lr_decay("WarmupMultiStepLR"), LrDecay::kMultiStep);
  EXPECT_EQ(parse_lr_decay("WarmupCosineLR"), LrDecay::kCosine);
  try {
    parse_lr_decay("cosine");
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("SOLVER.LR_SCHEDULER_NAME"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'cosine'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace dtrain::vision::solver
