#pragma once

// The hooks around Mask R-CNN's training step, the engine's (src/training) and its own, and
// "how often" for each: the learning rate before each step (training::LrScheduleHook); after
// it the progress report (losses, learning rate, speed; printed and written to metrics.json
// and TensorBoard), the periodic checkpoint and evaluation, and an elastic job's commit.
// trainer.cc adds them in that order.
#include <chrono>
#include <cstdint>
#include <memory>

#include "apps/maskrcnn/training_distribution.h"
#include "apps/maskrcnn/training_run.h"
#include "training/divergence_watch.h"
#include "training/hook.h"
#include "training/iteration_timer.h"
#include "training/lr_schedule_hook.h"
#include "training/periodic_hook.h"

namespace dtrain::maskrcnn {

using Clock = training::IterationTimer::Clock;
using training::DivergenceWatch;

// Every LOG_PERIOD iterations and at the end: the losses averaged over the ranks (the
// numbers describe the global batch), the learning rate, images per second since the last
// report and the time left, printed and logged by rank 0.
class ProgressReport {
 public:
  ProgressReport(const TrainingRun& run, training::IterationTimer& timer)
      : steps_(run.steps), rank_(run.placement.rank), timer_(timer) {}

  bool due(int64_t done) const { return done % steps_.log_period == 0 || done == steps_.max_iter; }

  // `loss_scale`: float16 training's, logged with the steps it skipped so far (overflows).
  void report(int64_t done, const modeling::LossDict& losses, double lr, const vision::solver::LossScaler* loss_scale,
              TrainingLog& log) {
    Scalars scalars = averaged_losses(losses);
    if (loss_scale) {
      scalars.emplace_back("loss_scale", loss_scale->scale());
      scalars.emplace_back("skipped_steps", static_cast<double>(loss_scale->skipped_steps()));
    }
    const training::IterationTimer::Window window = timer_.take_window();
    const double images_per_s = static_cast<double>(window.steps * steps_.global_batch) / window.seconds;
    const double eta = timer_.eta_s(done, steps_.max_iter);
    scalars.emplace_back("lr", lr);
    scalars.emplace_back("images_per_s", images_per_s);
    if (rank_ != 0) return;
    print(done, scalars, lr, images_per_s, eta);
    log.write(done, "train", scalars);
  }

 private:
  // Each loss averaged over the ranks, then their sum as total_loss.
  static Scalars averaged_losses(const modeling::LossDict& losses) {
    Scalars scalars;
    double total_average = 0;
    for (const auto& [name, value] : losses) {
      const double average = libtorch::metric_average(value.item<double>(), "log." + name);
      total_average += average;
      scalars.emplace_back(name, average);
    }
    scalars.emplace_back("total_loss", total_average);
    return scalars;
  }

  void print(int64_t done, const Scalars& scalars, double lr, double images_per_s, double eta) const {
    std::string line = "iter: " + std::to_string(done) + "/" + std::to_string(steps_.max_iter);
    for (const auto& [name, value] : scalars) {
      if (name == "lr" || name == "images_per_s") continue;
      char field[64];
      std::snprintf(field, sizeof field, "  %s: %.4f", name.c_str(), value);
      line += field;
    }
    std::printf("%s  lr: %.6g  images/s: %.2f  eta: %.0f s\n", line.c_str(), lr, images_per_s, eta);
    std::fflush(stdout);
  }

  const StepPlan steps_;
  const int rank_;
  training::IterationTimer& timer_;
};

// SOLVER.BASE_LR, warm-up and decay steps: the step's learning rate, set before it.
inline std::unique_ptr<training::LrScheduleHook> lr_schedule_hook(const vision::solver::WarmupLrSchedule& schedule,
                                                                  torch::optim::Optimizer& sgd) {
  return std::make_unique<training::LrScheduleHook>([&schedule](int64_t iteration) { return schedule.lr(iteration); },
                                                    sgd);
}

// Every LOG_PERIOD iterations and at the end: the losses checked for divergence, then
// reported (ProgressReport).
class ProgressHook : public training::Hook {
 public:
  ProgressHook(ProgressReport& progress, DivergenceWatch& watch, const modeling::LossDict& losses,
               const training::LrScheduleHook& lr, const TrainableModel& m, TrainingLog& log)
      : progress_(progress), watch_(watch), losses_(losses), lr_(lr), m_(m), log_(log) {}
  void after_step(int64_t done) override {
    if (!progress_.due(done)) return;
    watch_.check();  // the last iteration is always due: the final model is checked too
    progress_.report(done, losses_, lr_.lr(), m_.loss_scale(), log_);
  }

 private:
  ProgressReport& progress_;
  DivergenceWatch& watch_;
  const modeling::LossDict& losses_;
  const training::LrScheduleHook& lr_;
  const TrainableModel& m_;
  TrainingLog& log_;
};

// A checkpoint every CHECKPOINT_PERIOD and an evaluation every EVAL_PERIOD.
class CheckpointAndEvaluateHook : public training::Hook {
 public:
  CheckpointAndEvaluateHook(TrainableModel& m, TrainingRun& run, GradientExchange& exchange,
                            const DivergenceWatch& watch)
      : m_(m), run_(run), exchange_(exchange), watch_(watch) {}
  void after_step(int64_t done) override;

 private:
  TrainableModel& m_;
  TrainingRun& run_;
  GradientExchange& exchange_;
  const DivergenceWatch& watch_;
};

// SOLVER.ELASTIC.COMMIT_PERIOD: the state an elastic job goes back to when a worker is lost,
// never one of NaN weights.
inline std::unique_ptr<training::PeriodicHook> elastic_commit_hook(libtorch::TorchState& state, DivergenceWatch& watch,
                                                                   int64_t period) {
  return std::make_unique<training::PeriodicHook>(period, [&state, &watch](int64_t /*done*/) {
    watch.check();
    state.commit();
  });
}

}  // namespace dtrain::maskrcnn
