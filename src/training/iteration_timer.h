#pragma once

// How fast training goes, for the progress reports (Detectron2's IterationTimer): the time
// since this call to Trainer::train began, and the steps and seconds since the last report.
// Added before the hooks that report, so that they see the step that just ran counted.
#include <chrono>
#include <cstdint>

#include "training/hook.h"

namespace dtrain::training {

class IterationTimer : public Hook {
 public:
  using Clock = std::chrono::steady_clock;

  // The steps of one window and the seconds they took.
  struct Window {
    int64_t steps;
    double seconds;
  };

  void before_train(int64_t iteration) override {
    first_ = iteration;
    started_ = window_start_ = Clock::now();
    window_steps_ = 0;
  }
  void after_step(int64_t /*done*/) override { ++window_steps_; }

  Clock::time_point started() const { return started_; }
  double elapsed_s() const { return seconds_since(started_); }

  // The window since the last call (or since training began); the next one starts now.
  Window take_window() {
    const Window window{window_steps_, seconds_since(window_start_)};
    window_start_ = Clock::now();
    window_steps_ = 0;
    return window;
  }

  // Seconds until iteration `last` at the pace since training began, `done` iterations in.
  double eta_s(int64_t done, int64_t last) const {
    return elapsed_s() / static_cast<double>(done - first_) * static_cast<double>(last - done);
  }

 private:
  static double seconds_since(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  int64_t first_ = 0;
  Clock::time_point started_ = Clock::now();
  Clock::time_point window_start_ = started_;
  int64_t window_steps_ = 0;
};

}  // namespace dtrain::training
