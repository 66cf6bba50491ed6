#pragma once

// The learning rate of each step, set on every parameter group of the optimizer before the
// step runs (Detectron2's LRScheduler hook). The schedule itself (warm-up, steps, cosine) is
// a function of the iteration, so that a resumed or elastic run sets what an uninterrupted
// one would have.
#include <torch/optim/optimizer.h>

#include <cstdint>
#include <functional>
#include <utility>

#include "training/hook.h"

namespace dtrain::training {

class LrScheduleHook : public Hook {
 public:
  LrScheduleHook(std::function<double(int64_t)> lr_at, torch::optim::Optimizer& optimizer)
      : lr_at_(std::move(lr_at)), optimizer_(optimizer) {}

  void before_step(int64_t iteration) override {
    lr_ = lr_at_(iteration);
    for (auto& group : optimizer_.param_groups()) group.options().set_lr(lr_);
  }
  // The rate of the step that ran last, for the progress report.
  double lr() const { return lr_; }

 private:
  const std::function<double(int64_t)> lr_at_;
  torch::optim::Optimizer& optimizer_;
  double lr_ = 0;
};

}  // namespace dtrain::training
