// The engine's plain hooks: the periodic action and the iteration timer's counting.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "training/iteration_timer.h"
#include "training/periodic_hook.h"
#include "training/trainer.h"

namespace dtrain::training {
namespace {

TEST(PeriodicHook, ActsAfterEveryStepThatCompletesAPeriodCountedFromIterationZero) {
  std::vector<int64_t> acted;
  Trainer trainer([](int64_t) {});
  trainer.emplace<PeriodicHook>(3, [&](int64_t done) { acted.push_back(done); });
  int64_t iteration = 2;  // a resumed run: periods stay where an uninterrupted run has them
  trainer.train(iteration, 10);
  EXPECT_EQ(acted, (std::vector<int64_t>{3, 6, 9}));
}

TEST(PeriodicHook, APeriodOfZeroNeverActs) {
  int acted = 0;
  Trainer trainer([](int64_t) {});
  trainer.emplace<PeriodicHook>(0, [&](int64_t) { ++acted; });
  int64_t iteration = 0;
  trainer.train(iteration, 5);
  EXPECT_EQ(acted, 0);
}

TEST(IterationTimer, AWindowHoldsTheStepsSinceTheLastOneAndTheNextStartsEmpty) {
  std::vector<int64_t> window_steps;
  Trainer trainer([](int64_t) {});
  auto& timer = trainer.emplace<IterationTimer>();
  // Reports every 4 iterations, added after the timer as a progress writer is.
  trainer.emplace<PeriodicHook>(4, [&](int64_t) {
    const IterationTimer::Window window = timer.take_window();
    EXPECT_GE(window.seconds, 0.0);
    window_steps.push_back(window.steps);
  });
  int64_t iteration = 1;
  trainer.train(iteration, 12);
  EXPECT_EQ(window_steps, (std::vector<int64_t>{3, 4, 4}));  // iterations 1-3, 4-7, 8-11
  EXPECT_EQ(timer.take_window().steps, 0);
  EXPECT_GE(timer.eta_s(12, 20), 0.0);
  EXPECT_EQ(timer.eta_s(20, 20), 0.0);
}

}  // namespace
}  // namespace dtrain::training
