#include "vision/solver/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string>

namespace dtrain::vision::solver {

LrDecay parse_lr_decay(const std::string& name) {
  if (name == "WarmupMultiStepLR") return LrDecay::kMultiStep;
  if (name == "WarmupCosineLR") return LrDecay::kCosine;
  throw std::invalid_argument("SOLVER.LR_SCHEDULER_NAME must be WarmupMultiStepLR or WarmupCosineLR, got '" + name +
                              "'");
}

WarmupLrSchedule::WarmupLrSchedule(LrScheduleOptions options) : options_(std::move(options)) {
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
  if (options_.decay == LrDecay::kCosine) {
    if (options_.max_iter < 1) {
      throw std::invalid_argument("SOLVER.MAX_ITER must be at least 1 for WarmupCosineLR, got " +
                                  std::to_string(options_.max_iter));
    }
    if (!(options_.base_lr_end >= 0 && options_.base_lr_end <= options_.base_lr)) {
      throw std::invalid_argument("SOLVER.BASE_LR_END must be in [0, SOLVER.BASE_LR], got " +
                                  std::to_string(options_.base_lr_end));
    }
  }
}

double WarmupLrSchedule::decayed(int64_t iteration) const {
  if (options_.decay == LrDecay::kCosine) {
    // Past max_iter (a run extended on resume) the rate stays at its end value.
    const double progress =
        static_cast<double>(std::min(iteration, options_.max_iter)) / static_cast<double>(options_.max_iter);
    return options_.base_lr_end +
           (options_.base_lr - options_.base_lr_end) * 0.5 * (1.0 + std::cos(std::numbers::pi * progress));
  }
  // Milestones passed: the number of steps <= iteration.
  const auto passed =
      std::upper_bound(options_.steps.begin(), options_.steps.end(), iteration) - options_.steps.begin();
  return options_.base_lr * std::pow(options_.gamma, static_cast<double>(passed));
}

double WarmupLrSchedule::lr(int64_t iteration) const {
  double factor = 1.0;
  if (iteration < options_.warmup_iters) {
    const double alpha = static_cast<double>(iteration) / static_cast<double>(options_.warmup_iters);
    factor = options_.warmup_factor * (1 - alpha) + alpha;
  }
  return factor * decayed(iteration);
}

}  // namespace dtrain::vision::solver
