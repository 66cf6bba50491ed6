#include "vision/solver/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace dtrain::vision::solver {

WarmupMultiStepSchedule::WarmupMultiStepSchedule(LrScheduleOptions options) : options_(std::move(options)) {
  if (!(options_.base_lr > 0)) {
    throw std::invalid_argument("SOLVER.BASE_LR must be positive, got " + std::to_string(options_.base_lr));
  }
  for (size_t i = 0; i < options_.steps.size(); ++i) {
    if (options_.steps[i] < 0 || (i > 0 && options_.steps[i] <= options_.steps[i - 1])) {
      throw std::invalid_argument("SOLVER.STEPS must be increasing non-negative iterations, got " +
                                  std::to_string(options_.steps[i]) + " at position " + std::to_string(i));
    }
  }
  if (!(options_.gamma > 0)) {
    throw std::invalid_argument("SOLVER.GAMMA must be positive, got " + std::to_string(options_.gamma));
  }
  if (options_.warmup_iters < 0) {
    throw std::invalid_argument("SOLVER.WARMUP_ITERS must not be negative, got " +
                                std::to_string(options_.warmup_iters));
  }
  if (!(options_.warmup_factor > 0 && options_.warmup_factor <= 1)) {
    throw std::invalid_argument("SOLVER.WARMUP_FACTOR must be in (0, 1], got " +
                                std::to_string(options_.warmup_factor));
  }
}

double WarmupMultiStepSchedule::lr(int64_t iteration) const {
  double factor = 1.0;
  if (iteration < options_.warmup_iters) {
    const double alpha = static_cast<double>(iteration) / static_cast<double>(options_.warmup_iters);
    factor = options_.warmup_factor * (1 - alpha) + alpha;
  }
  // Milestones passed: the number of steps <= iteration.
  const auto passed = std::upper_bound(options_.steps.begin(), options_.steps.end(), iteration) - options_.steps.begin();
  return options_.base_lr * factor * std::pow(options_.gamma, static_cast<double>(passed));
}

}  // namespace dtrain::vision::solver
