// DTRAIN_AUTOTUNE=1: rank 0 tunes the fusion threshold and the cycle time while training
// runs, by measured throughput, then keeps the best (Horovod's HOROVOD_AUTOTUNE, with a
// simpler search). Pure logic: the background loop feeds it what each cycle executed and
// carries its choice to every rank in the cycle plan, so all ranks fuse alike.
//
// A sample is `steps_per_sample` whole training steps under one setting. Steps are found by
// recurrence: the first allreduce the tuner sees marks a step each time it runs again, so a
// sample spans S steps' allreduces and their compute, whatever the program does between
// them. Its score is the allreduce bytes of those steps over their wall time: with the same
// bytes every step, the step rate.
//
// The search: `warmup_samples` under the defaults (discarded: first steps allocate and fill
// caches), every fusion threshold at the default cycle time, then every cycle time at the
// best threshold. One sample each is noisy, so a best other than the defaults must then win
// again: `confirm_samples` more of it and of the defaults, taking turns, and its median must
// beat the defaults' by `confirm_margin`, else the defaults stay. Then the choice is fixed.
// A program whose allreduce names never recur never completes a sample and keeps the defaults.
#pragma once

#include <chrono>
#include <cstddef>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::runtime {

struct TunedKnobs {
  std::size_t fusion_threshold_bytes = 64 * 1024 * 1024;
  double cycle_time_ms = 1.0;

  bool operator==(const TunedKnobs&) const = default;
};

struct AutotuneOptions {
  int warmup_samples = 3;
  int steps_per_sample = 5;
  std::vector<std::size_t> fusion_thresholds = {0, 1u << 20, 4u << 20, 16u << 20, 64u << 20, 128u << 20};
  std::vector<double> cycle_times_ms = {0.5, 1, 2.5, 5, 10};
  int confirm_samples = 3;
  double confirm_margin = 0.02;  // the winner's median step rate must be this much higher
  std::string log_path;          // DTRAIN_AUTOTUNE_LOG: a CSV row per sample; empty: none
};

class Autotuner {
 public:
  using Clock = std::chrono::steady_clock;

  // Throws dtrain::Error when the log cannot be opened.
  Autotuner(TunedKnobs defaults, AutotuneOptions options);

  // After rank 0 ran a cycle: every allreduce it executed (name, bytes), and when it finished.
  void record(const std::vector<std::pair<std::string, std::size_t>>& allreduces, Clock::time_point now);

  // The settings the next cycles use.
  const TunedKnobs& knobs() const { return current_; }
  bool finished() const { return phase_ == Phase::kDone; }

 private:
  enum class Phase { kWarmup, kFusion, kCycle, kConfirm, kDone };
  struct Scored {
    TunedKnobs knobs;
    double score = 0;  // bytes per second
  };

  void finish_sample(Clock::time_point now);
  void advance(double score);
  void file_score(double score);
  void choose_next_knobs();
  void log_sample(double seconds, double score);
  TunedKnobs confirmed(const TunedKnobs& winner) const;
  static const char* phase_name(Phase phase);

  TunedKnobs defaults_;
  AutotuneOptions options_;
  std::unique_ptr<std::ofstream> log_;

  Phase phase_ = Phase::kWarmup;
  TunedKnobs current_;
  std::size_t candidate_ = 0;  // index into the phase's list
  int warmups_done_ = 0;
  int samples_ = 0;
  std::vector<Scored> fusion_scores_, cycle_scores_, confirm_scores_;

  // The sample under way.
  std::string reference_;  // the allreduce whose recurrence marks steps; empty: not started
  Clock::time_point sample_start_;
  int steps_ = 0;
  std::size_t bytes_ = 0;
};

}  // namespace dtrain::runtime
