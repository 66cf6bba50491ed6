#pragma once

// The hooks around Mask R-CNN's training step (training::Trainer runs them in the order
// trainer.cc adds them): the learning rate before each step; after it the progress report
// (losses, learning rate, speed; printed and written to metrics.json and TensorBoard), the
// periodic checkpoint and evaluation, and an elastic job's commit. "How often" lives here.
#include <chrono>
#include <cstdint>

#include "apps/maskrcnn/divergence_watch.h"
#include "apps/maskrcnn/training_distribution.h"
#include "apps/maskrcnn/training_run.h"
#include "training/hook.h"

namespace dtrain::maskrcnn {

using Clock = std::chrono::steady_clock;

// Every LOG_PERIOD iterations and at the end: the losses averaged over the ranks (the
// numbers describe the global batch), the learning rate, images per second since the last
// report and the time left, printed and logged by rank 0.
class ProgressReport {
 public:
  ProgressReport(const TrainingRun& run, int64_t start_iter)
      : steps_(run.steps), rank_(run.placement.rank), start_iter_(start_iter) {}

  Clock::time_point started() const { return start_; }
  void step_done() { ++window_steps_; }
  bool due(int64_t done) const { return done % steps_.log_period == 0 || done == steps_.max_iter; }

  // `loss_scale`: float16 training's, logged with the steps it skipped so far (overflows).
  void report(int64_t done, const modeling::LossDict& losses, double lr, const vision::solver::LossScaler* loss_scale,
              TrainingLog& log) {
    Scalars scalars = averaged_losses(losses);
    if (loss_scale) {
      scalars.emplace_back("loss_scale", loss_scale->scale());
      scalars.emplace_back("skipped_steps", static_cast<double>(loss_scale->skipped_steps()));
    }
    const auto now = Clock::now();
    const double window = std::chrono::duration<double>(now - window_start_).count();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    const double images_per_s = static_cast<double>(window_steps_ * steps_.global_batch) / window;
    const double eta = elapsed / static_cast<double>(done - start_iter_) * static_cast<double>(steps_.max_iter - done);
    scalars.emplace_back("lr", lr);
    scalars.emplace_back("images_per_s", images_per_s);
    window_start_ = now;
    window_steps_ = 0;
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
  const int64_t start_iter_;
  const Clock::time_point start_ = Clock::now();
  Clock::time_point window_start_ = start_;
  int64_t window_steps_ = 0;
};

// SOLVER.BASE_LR, warm-up and decay steps: the step's learning rate, set before it.
class LrScheduleHook : public training::Hook {
 public:
  LrScheduleHook(const vision::solver::WarmupLrSchedule& schedule, vision::solver::MultiTensorSgd& sgd)
      : schedule_(schedule), sgd_(sgd) {}
  void before_step(int64_t iteration) override {
    lr_ = schedule_.lr(iteration);
    for (auto& group : sgd_.param_groups()) static_cast<torch::optim::SGDOptions&>(group.options()).lr(lr_);
  }
  double lr() const { return lr_; }

 private:
  const vision::solver::WarmupLrSchedule& schedule_;
  vision::solver::MultiTensorSgd& sgd_;
  double lr_ = 0;
};

// Every LOG_PERIOD iterations and at the end: the losses checked for divergence, then
// reported (ProgressReport).
class ProgressHook : public training::Hook {
 public:
  ProgressHook(ProgressReport& progress, DivergenceWatch& watch, const modeling::LossDict& losses,
               const LrScheduleHook& lr, const TrainableModel& m, TrainingLog& log)
      : progress_(progress), watch_(watch), losses_(losses), lr_(lr), m_(m), log_(log) {}
  void after_step(int64_t done) override {
    progress_.step_done();
    if (!progress_.due(done)) return;
    watch_.check();  // the last iteration is always due: the final model is checked too
    progress_.report(done, losses_, lr_.lr(), m_.loss_scale(), log_);
  }

 private:
  ProgressReport& progress_;
  DivergenceWatch& watch_;
  const modeling::LossDict& losses_;
  const LrScheduleHook& lr_;
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

// SOLVER.ELASTIC.COMMIT_PERIOD: the state an elastic job goes back to when a worker is lost.
class ElasticCommitHook : public training::Hook {
 public:
  ElasticCommitHook(libtorch::TorchState& state, DivergenceWatch& watch, int64_t period)
      : state_(state), watch_(watch), period_(period) {}
  void after_step(int64_t done) override {
    if (!training::period_ends(done, period_)) return;
    watch_.check();  // never a commit of NaN weights
    state_.commit();
  }

 private:
  libtorch::TorchState& state_;
  DivergenceWatch& watch_;
  const int64_t period_;
};

}  // namespace dtrain::maskrcnn
