// The learning rate per iteration, against values worked out by hand from
// Detectron2's WarmupMultiStepLR definition.
#include <gtest/gtest.h>

#include "vision/solver/lr_schedule.h"

namespace dtrain::vision::solver {
namespace {

TEST(WarmupMultiStepSchedule, WarmsUpLinearlyThenDecaysAtEachStep) {
  WarmupMultiStepSchedule schedule({0.02, {300, 400}, 0.1, 100, 0.001});
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

TEST(WarmupMultiStepSchedule, NoWarmupAndNoStepsIsConstant) {
  WarmupMultiStepSchedule schedule({0.5, {}, 0.1, 0, 1.0});
  EXPECT_DOUBLE_EQ(schedule.lr(0), 0.5);
  EXPECT_DOUBLE_EQ(schedule.lr(123456), 0.5);
}

void expect_refused(LrScheduleOptions options, const std::string& key) {
  try {
    WarmupMultiStepSchedule schedule(options);
    ADD_FAILURE() << "expected an error naming " << key;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
}

TEST(WarmupMultiStepSchedule, BadSettingsNameTheirKey) {
  expect_refused({0.0, {10}, 0.1, 5, 0.1}, "SOLVER.BASE_LR");
  expect_refused({0.1, {10, 10}, 0.1, 5, 0.1}, "SOLVER.STEPS");
  expect_refused({0.1, {20, 10}, 0.1, 5, 0.1}, "SOLVER.STEPS");
  expect_refused({0.1, {10}, 0.0, 5, 0.1}, "SOLVER.GAMMA");
  expect_refused({0.1, {10}, 0.1, -1, 0.1}, "SOLVER.WARMUP_ITERS");
  expect_refused({0.1, {10}, 0.1, 5, 0.0}, "SOLVER.WARMUP_FACTOR");
}

}  // namespace
}  // namespace dtrain::vision::solver
