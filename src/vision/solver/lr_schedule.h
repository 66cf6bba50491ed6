#pragma once

// The learning-rate schedule of Detectron2's and torchvision's detection
// recipes: a linear warm-up from base_lr * warmup_factor to base_lr over
// warmup_iters iterations, then multiplied by gamma at each milestone
// (SOLVER.STEPS). Plain arithmetic, so the trainer, its tests and a resumed
// run all compute the same rate for the same iteration.
#include <cstdint>
#include <vector>

namespace dtrain::vision::solver {

struct LrScheduleOptions {
  double base_lr = 0.02;
  std::vector<int64_t> steps{60000, 80000};  // iterations at which the rate is multiplied by gamma
  double gamma = 0.1;
  int64_t warmup_iters = 1000;
  double warmup_factor = 0.001;
};

class WarmupMultiStepSchedule {
 public:
  // Throws std::invalid_argument naming the SOLVER key for a negative or
  // zero base rate, steps that do not increase, gamma <= 0, negative warm-up
  // iterations or a warm-up factor outside (0, 1].
  explicit WarmupMultiStepSchedule(LrScheduleOptions options);

  // The rate for (0-based) iteration `iteration`: base_lr * warmup(iteration)
  // * gamma ^ (number of steps <= iteration), where warmup(i) for i <
  // warmup_iters is warmup_factor * (1 - i / warmup_iters) + i / warmup_iters.
  double lr(int64_t iteration) const;

  const LrScheduleOptions& options() const { return options_; }

 private:
  LrScheduleOptions options_;
};

}  // namespace dtrain::vision::solver
