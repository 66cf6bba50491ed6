#pragma once

// The learning-rate schedules of Detectron2's detection recipes
// (SOLVER.LR_SCHEDULER_NAME): a linear warm-up from base_lr * warmup_factor
// to base_lr over warmup_iters iterations, then either a multiplication by
// gamma at each milestone (WarmupMultiStepLR, SOLVER.STEPS) or a half cosine
// from base_lr down to base_lr_end at max_iter (WarmupCosineLR). Plain
// arithmetic, so the trainer, its tests and a resumed run all compute the
// same rate for the same iteration.
#include <cstdint>
#include <string>
#include <vector>

namespace dtrain::vision::solver {

enum class LrDecay {
  kMultiStep,  // "WarmupMultiStepLR"
  kCosine,     // "WarmupCosineLR"
};

// The decay that SOLVER.LR_SCHEDULER_NAME names; throws std::invalid_argument
// naming the key and the accepted names for any other.
LrDecay parse_lr_decay(const std::string& name);

struct LrScheduleOptions {
  double base_lr = 0.02;
  std::vector<int64_t> steps{60000, 80000};  // multi-step: iterations at which the rate is multiplied by gamma
  double gamma = 0.1;
  int64_t warmup_iters = 1000;
  double warmup_factor = 0.001;
  LrDecay decay = LrDecay::kMultiStep;
  int64_t max_iter = 90000;  // cosine: where the rate reaches base_lr_end
  double base_lr_end = 0.0;
};

class WarmupLrSchedule {
 public:
  // Throws std::invalid_argument naming the SOLVER key for a negative or
  // zero base rate, steps that do not increase, gamma <= 0, negative warm-up
  // iterations, a warm-up factor outside (0, 1], and for the cosine a
  // max_iter below 1 or an end rate outside [0, base_lr].
  explicit WarmupLrSchedule(LrScheduleOptions options);

  // The rate for (0-based) iteration `iteration`: warmup(iteration) *
  // decayed(iteration), where warmup(i) for i < warmup_iters is
  // warmup_factor * (1 - i / warmup_iters) + i / warmup_iters, and decayed(i)
  // is base_lr * gamma ^ (number of steps <= i) for the multi-step decay and
  // base_lr_end + (base_lr - base_lr_end) * (1 + cos(pi * min(i, max_iter) /
  // max_iter)) / 2 for the cosine.
  double lr(int64_t iteration) const;

  const LrScheduleOptions& options() const { return options_; }

 private:
  double decayed(int64_t iteration) const;

  LrScheduleOptions options_;
};

}  // namespace dtrain::vision::solver
