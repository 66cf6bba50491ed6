// Autotuning against a grid search, in one run: a training loop's allreduces (ResNet-50's 161
// gradients, submitted in backward order, optionally with compute between them) tuned with
// DTRAIN_AUTOTUNE, then timed under every fusion threshold x cycle time the tuner may pick;
// the grid's best, the defaults and the tuned settings are then timed head to head. Each
// setting is its own init() of the runtime.
//
//   dtrain run -np 2 -- build/apps/dtrain-bench-autotune [--steps 20] [--warmup 3] [--rounds 3]
//       [--final-rounds 5] [--compute-ms 0] [--steps-per-sample 5] [--json FILE]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include "bench/allreduce/resnet50_gradients.h"
#include "bench/busy_compute.h"
#include "dtrain/dtrain.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int steps = 20;
  int warmup = 3;
  double compute_ms = 0;  // per step: a third before the gradients (forward), the rest between them
  int steps_per_sample = 5;
  int rounds = 3;
  int final_rounds = 5;
  std::string json;
};

struct Knobs {
  long long fusion_bytes;
  double cycle_ms;
};

class GradientSteps {
 public:
  GradientSteps() : shapes_(dtrain::bench::resnet50_gradient_shapes()) {
    for (const auto& shape : shapes_) {
      const auto n = std::accumulate(shape.begin(), shape.end(), std::int64_t{1}, std::multiplies<>());
      gradients_.emplace_back(static_cast<std::size_t>(n), 0.5f);
    }
  }

  // One step: forward compute, then the gradients from the last layer to the first, each
  // reduced as soon as "backward" produced it, then wait for all.
  void step(double compute_ms) {
    const double per_layer = compute_ms * 2 / 3 / static_cast<double>(shapes_.size());
    dtrain::bench::compute_for(compute_ms / 3);
    std::vector<dtrain::Handle> handles;
    for (std::size_t k = shapes_.size(); k-- > 0;) {
      dtrain::bench::compute_for(per_layer);
      handles.push_back(dtrain::allreduce_async(
          "grad." + std::to_string(k), {gradients_[k].data(), dtrain::DataType::kFloat32, shapes_[k]},
          {gradients_[k].data(), dtrain::DataType::kFloat32, shapes_[k]}, {dtrain::ReduceOp::kAverage}));
    }
    for (auto& h : handles) h.wait();
  }

  // Seconds per step over `steps`, after `warmup` untimed ones; every rank agrees (rank 0's).
  double seconds_per_step(int warmup, int steps, double compute_ms) {
    for (int i = 0; i < warmup; ++i) step(compute_ms);
    dtrain::barrier();
    const auto start = Clock::now();
    for (int i = 0; i < steps; ++i) step(compute_ms);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count() / steps;
    dtrain::broadcast("seconds_per_step", {&seconds, dtrain::DataType::kFloat64, {1}}, 0);
    return seconds;
  }

 private:
  std::vector<std::vector<std::int64_t>> shapes_;
  std::vector<std::vector<float>> gradients_;
};

void set_knobs(const Knobs& k) {
  setenv("DTRAIN_FUSION_THRESHOLD", std::to_string(k.fusion_bytes).c_str(), 1);
  std::ostringstream cycle;
  cycle << k.cycle_ms;
  setenv("DTRAIN_CYCLE_TIME_MS", cycle.str().c_str(), 1);
}

// The tuner's choice, from the last row of its log ("N,final,<bytes>,<ms>,,,,").
Knobs tuned_knobs(const std::string& log) {
  std::ifstream in(log);
  Knobs knobs{-1, -1};
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> fields;
    std::stringstream columns(line);
    for (std::string f; std::getline(columns, f, ',');) fields.push_back(f);
    if (fields.size() >= 4 && fields[1] == "final") knobs = {std::stoll(fields[2]), std::stod(fields[3])};
  }
  return knobs;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  CLI::App app{"Autotuning against a grid search on ResNet-50's gradients (run under dtrain run -np N)"};
  app.add_option("--steps", options.steps, "Timed steps per setting");
  app.add_option("--warmup", options.warmup, "Untimed steps per setting first");
  app.add_option("--compute-ms", options.compute_ms, "Compute per step around the gradients (0: communication only)");
  app.add_option("--steps-per-sample", options.steps_per_sample, "DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE");
  app.add_option("--rounds", options.rounds, "Rounds of timing the grid; each figure is the median");
  app.add_option("--final-rounds", options.final_rounds,
                 "Rounds of the defaults, the tuned and the grid's best head to head");
  app.add_option("--json", options.json, "Append the results as a JSON line");
  CLI11_PARSE(app, argc, argv);

  const int rank = dtrain::placement_from_environment().rank;
  GradientSteps steps;
  const Knobs defaults{64LL << 20, 1.0};
  const std::vector<long long> thresholds = {0, 1LL << 20, 4LL << 20, 16LL << 20, 64LL << 20, 128LL << 20};
  const std::vector<double> cycles = {0.5, 1, 2.5, 5, 10};

  // 1. Tune: start from the defaults, run until the tuner has had every sample it needs.
  const std::string log =
      (std::filesystem::temp_directory_path() / ("dtrain-autotune-" + std::to_string(getpid()) + ".csv")).string();
  set_knobs(defaults);
  setenv("DTRAIN_AUTOTUNE", "1", 1);
  setenv("DTRAIN_AUTOTUNE_LOG", log.c_str(), 1);
  setenv("DTRAIN_AUTOTUNE_STEPS_PER_SAMPLE", std::to_string(options.steps_per_sample).c_str(), 1);
  dtrain::init();
  setenv("DTRAIN_AUTOTUNE_WARMUP_SAMPLES", "3", 1);
  const int samples = 3 + static_cast<int>(thresholds.size() + cycles.size()) + 6;  // warm-up, search, confirmation
  const auto tune_start = Clock::now();
  for (int i = 0; i < (samples + 1) * options.steps_per_sample + 1; ++i) steps.step(options.compute_ms);
  const double tuning_s = std::chrono::duration<double>(Clock::now() - tune_start).count();
  dtrain::shutdown();
  unsetenv("DTRAIN_AUTOTUNE");
  // Every rank needs the tuned knobs to time them; rank 0 has the log.
  Knobs tuned = rank == 0 ? tuned_knobs(log) : Knobs{0, 0};
  if (rank == 0) {
    std::printf("the tuner's samples (%s):\n%s\n", log.c_str(),
                std::string(std::istreambuf_iterator<char>(std::ifstream(log).rdbuf()), {}).c_str());
    std::filesystem::remove(log);
  }
  dtrain::init();
  dtrain::broadcast("tuned", {&tuned, dtrain::DataType::kUInt8, {static_cast<std::int64_t>(sizeof(tuned))}}, 0);
  dtrain::shutdown();
  if (tuned.fusion_bytes < 0) {
    if (rank == 0) std::fprintf(stderr, "the tuner did not finish within %.1f s of tuning\n", tuning_s);
    return 1;
  }

  // 2. Time every grid point the same way, in rounds, the settings taking turns; each figure
  // is the median of its rounds.
  std::vector<Knobs> settings;
  for (double cycle : cycles) {
    for (long long fusion : thresholds) settings.push_back({fusion, cycle});
  }
  auto time_setting = [&](const Knobs& knobs) {
    set_knobs(knobs);
    dtrain::init();
    const double seconds = steps.seconds_per_step(options.warmup, options.steps, options.compute_ms);
    dtrain::shutdown();
    return seconds;
  };
  std::vector<std::vector<double>> times(settings.size());
  for (int round = 0; round < options.rounds; ++round) {
    for (std::size_t i = 0; i < settings.size(); ++i) times[i].push_back(time_setting(settings[i]));
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::size_t best = 0;
  for (std::size_t i = 1; i < settings.size(); ++i) {
    if (median(times[i]) < median(times[best])) best = i;
  }
  // The grid's best is the lowest of 30 noisy medians, biased by its luck and by the
  // machine's drift: time it again head to head with the defaults and the tuned settings.
  std::vector<std::vector<double>> final_times(3);
  const std::vector<Knobs> finalists = {defaults, tuned, settings[best]};
  for (int round = 0; round < options.final_rounds; ++round) {
    for (std::size_t i = 0; i < finalists.size(); ++i) final_times[i].push_back(time_setting(finalists[i]));
  }
  const double t_defaults = median(final_times[0]);
  const double t_tuned = median(final_times[1]);
  const double t_best = median(final_times[2]);

  if (rank == 0) {
    for (std::size_t i = 0; i < settings.size(); ++i) {
      std::printf("grid  fusion %4lld MiB  cycle %4.1f ms  %8.2f ms/step\n", settings[i].fusion_bytes >> 20,
                  settings[i].cycle_ms, median(times[i]) * 1e3);
    }
    std::printf(
        "\nResNet-50 gradients, %d ranks, %.0f ms of compute per step (head to head: medians of %d rounds of "
        "%d steps):\n",
        dtrain::placement_from_environment().size, options.compute_ms, options.final_rounds, options.steps);
    std::printf("  defaults (64 MiB, 1 ms):            %8.2f ms/step\n", t_defaults * 1e3);
    std::printf("  best of the grid (%lld MiB, %g ms):  %8.2f ms/step\n", settings[best].fusion_bytes >> 20,
                settings[best].cycle_ms, t_best * 1e3);
    std::printf(
        "  autotuned (%lld MiB, %g ms):         %8.2f ms/step  (%.3fx the best's time, %.3fx the defaults'; "
        "tuning took %.1f s)\n",
        tuned.fusion_bytes >> 20, tuned.cycle_ms, t_tuned * 1e3, t_tuned / t_best, t_tuned / t_defaults, tuning_s);
    if (!options.json.empty()) {
      std::ofstream out(options.json, std::ios::app);
      out << "{\"bench\":\"autotune_resnet50\",\"compute_ms\":" << options.compute_ms
          << ",\"defaults_s\":" << t_defaults << ",\"best_s\":" << t_best
          << ",\"best_fusion\":" << settings[best].fusion_bytes << ",\"best_cycle_ms\":" << settings[best].cycle_ms
          << ",\"tuned_s\":" << t_tuned << ",\"tuned_fusion\":" << tuned.fusion_bytes
          << ",\"tuned_cycle_ms\":" << tuned.cycle_ms << "}\n";
    }
  }
  return 0;
}
