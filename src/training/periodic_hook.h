#pragma once

// An action every `period` iterations: a log line, an elastic commit, an evaluation
// (Detectron2's PeriodicWriter and EvalHook in one shape). What the action does is the
// model's; when it runs is this hook's.
#include <cstdint>
#include <functional>
#include <utility>

#include "training/hook.h"

namespace dtrain::training {

class PeriodicHook : public Hook {
 public:
  // action(done) after every step that completes a multiple of `period` iterations (0: never).
  PeriodicHook(int64_t period, std::function<void(int64_t)> action) : period_(period), action_(std::move(action)) {}

  void after_step(int64_t done) override {
    if (period_ends(done, period_)) action_(done);
  }

 private:
  const int64_t period_;
  const std::function<void(int64_t)> action_;
};

}  // namespace dtrain::training
