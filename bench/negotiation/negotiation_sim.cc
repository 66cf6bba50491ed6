// dtrain-bench-negotiation: the runtime's own negotiation (coordinator, response cache, cycle
// reports and plans as encoded on the wire, the shortcut's summaries) driven with N simulated
// ranks, each submitting a model's gradients as backward produces them, with arrival jitter
// between ranks. What it measures per cycle is what rank 0 does in a real job: decode every
// rank's report, plan, encode the plan (its CPU time on this thread), and what travels on the
// control plane (bytes, messages). docs/scaling.md reads it.
//
//   dtrain-bench-negotiation [--ranks 2,8,64,256,1024,4096] [--steps 6] [--jitter-ms 2]
//                            [--backward-ms 60] [--cycle-ms 1] [--json FILE]
#include <time.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/negotiation/gradient_sets.h"
#include "runtime/coordinator.h"
#include "runtime/cycle_summary.h"
#include "runtime/message.h"
#include "runtime/response_cache.h"
#include "runtime/stall_inspector.h"

namespace {

using dtrain::bench::Gradient;
using namespace dtrain::runtime;

double thread_cpu_us() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_nsec) / 1e3;
}

struct Settings {
  int steps = 6;            // the first fills the cache; the others are the steady state
  double backward_ms = 60;  // gradients become ready evenly over backward
  double jitter_ms = 2;     // each rank's each gradient later by U(0, jitter)
  double cycle_ms = 1;      // DTRAIN_CYCLE_TIME_MS
};

// One cycle as rank 0 lives it.
struct Cycle {
  double rank0_cpu_us = 0;     // decode the reports, plan, encode the plan
  std::size_t wire_bytes = 0;  // every report to rank 0 and the plan back to every rank
  int messages = 0;
  bool shortcut_agrees = false;  // every rank's summary equal: the mesh's shortcut would skip rank 0
};

struct Result {
  std::string model;
  int ranks;
  double cycles_per_step;
  double cpu_us_per_cycle;  // median over the steady-state cycles
  double cpu_ms_per_step;
  double bytes_per_cycle;
  double messages_per_cycle;
  double shortcut_fraction;
};

Request request_of(const Gradient& gradient, int rank) {
  Request r;
  r.rank = rank;
  r.type = OpType::kAllreduce;
  r.name = gradient.name;
  r.dtype = dtrain::DataType::kFloat32;
  r.device = dtrain::DeviceType::kCUDA;
  r.shape = {gradient.elements};
  return r;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::nth_element(values.begin(), values.begin() + static_cast<long>(values.size() / 2), values.end());
  return values[values.size() / 2];
}

Result simulate(const std::string& model, const std::vector<Gradient>& gradients, int ranks, const Settings& s) {
  ResponseCache cache(1024);  // every rank's cache is this one: they apply the same plans in order
  Coordinator coordinator(ranks, cache, StallInspector(3600, 0), nullptr);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> jitter(0, s.jitter_ms);
  const std::size_t count = gradients.size();
  std::vector<Cycle> steady;

  for (int step = 0; step < s.steps; ++step) {
    // ready[r][k]: when rank r's gradient k is ready; each rank reports in that order.
    std::vector<std::vector<std::pair<double, std::size_t>>> ready(static_cast<std::size_t>(ranks));
    for (auto& mine : ready) {
      for (std::size_t k = 0; k < count; ++k) {
        mine.emplace_back(s.backward_ms * static_cast<double>(k + 1) / static_cast<double>(count) + jitter(random), k);
      }
      std::sort(mine.begin(), mine.end());
    }
    std::vector<std::size_t> reported(static_cast<std::size_t>(ranks), 0);
    std::size_t planned = 0;
    for (double now = s.cycle_ms; planned < count; now += s.cycle_ms) {
      std::vector<std::vector<char>> encoded(static_cast<std::size_t>(ranks));
      std::vector<std::vector<char>> summaries(static_cast<std::size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        CycleReport report;
        auto& mine = ready[static_cast<std::size_t>(r)];
        std::size_t& next = reported[static_cast<std::size_t>(r)];
        for (; next < count && mine[next].first <= now; ++next) {
          const Request request = request_of(gradients[mine[next].second], r);
          if (auto position = cache.find(request)) {
            set_bit(report.cache_bits, *position);
          } else {
            report.requests.push_back(request);
          }
        }
        CycleSummary summary;
        summary.needs_coordinator = !report.requests.empty() || (r == 0 && !coordinator.idle());
        summary.cache_bits = report.cache_bits;
        summaries[static_cast<std::size_t>(r)] = encode(summary, 4096);
        encoded[static_cast<std::size_t>(r)] = encode(report);
      }
      Cycle cycle;
      cycle.shortcut_agrees = agreed_positions(summaries).has_value();
      // Rank 0: every report decoded, the plan made and encoded for the broadcast.
      const double start = thread_cpu_us();
      std::vector<CycleReport> reports;
      reports.reserve(encoded.size());
      for (const auto& bytes : encoded) reports.push_back(decode_report(bytes));
      const CyclePlan plan = coordinator.plan(reports, std::chrono::steady_clock::now());
      const std::vector<char> plan_bytes = encode(plan);
      cycle.rank0_cpu_us = thread_cpu_us() - start;
      for (const auto& bytes : encoded) cycle.wire_bytes += bytes.size();
      cycle.wire_bytes += plan_bytes.size() * static_cast<std::size_t>(ranks - 1);
      cycle.messages = 2 * (ranks - 1);
      // Every rank runs the plan: cached items touched, new responses cached (as resolve() does).
      for (const auto& item : plan.items) {
        if (item.cache_position >= 0) {
          cache.touch(static_cast<std::uint32_t>(item.cache_position));
          planned += cache.response_at(static_cast<std::uint32_t>(item.cache_position)).names.size();
        } else {
          if (ResponseCache::cacheable(item.response)) cache.put(item.response);
          planned += item.response.names.size();
        }
      }
      if (step > 0) steady.push_back(cycle);
    }
  }
  std::vector<double> cpu;
  double bytes = 0, messages = 0, agreeing = 0, cpu_total = 0;
  for (const Cycle& c : steady) {
    cpu.push_back(c.rank0_cpu_us);
    cpu_total += c.rank0_cpu_us;
    bytes += static_cast<double>(c.wire_bytes);
    messages += c.messages;
    agreeing += c.shortcut_agrees ? 1 : 0;
  }
  const double cycles = static_cast<double>(steady.size());
  const double steady_steps = s.steps - 1;
  return {model,
          ranks,
          cycles / steady_steps,
          median(cpu),
          cpu_total / steady_steps / 1000,
          bytes / cycles,
          messages / cycles,
          agreeing / cycles};
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  std::vector<int> ranks = {2, 8, 64, 256, 1024, 4096};
  std::string json_path;
  CLI::App app{"dtrain-bench-negotiation: the runtime's negotiation with N simulated ranks"};
  app.add_option("--ranks", ranks, "World sizes to simulate")->delimiter(',');
  app.add_option("--steps", settings.steps, "Steps per world size (the first fills the cache)")
      ->check(CLI::Range(2, 1000));
  app.add_option("--backward-ms", settings.backward_ms, "Backward's length: gradients become ready evenly over it")
      ->check(CLI::PositiveNumber);
  app.add_option("--jitter-ms", settings.jitter_ms, "Each gradient of each rank later by up to this")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--cycle-ms", settings.cycle_ms, "The cycle time (DTRAIN_CYCLE_TIME_MS)")->check(CLI::PositiveNumber);
  app.add_option("--json", json_path, "Also write the results here");
  CLI11_PARSE(app, argc, argv);
  for (int n : ranks) {
    if (n < 1) {
      std::fprintf(stderr, "dtrain-bench-negotiation: --ranks: %d is not a world size\n", n);
      return 2;
    }
  }

  const std::pair<std::string, std::vector<Gradient>> models[] = {
      {"resnet50", dtrain::bench::resnet50_gradients()},
      {"mask_rcnn_r50_fpn", dtrain::bench::mask_rcnn_r50_fpn_gradients()}};
  std::printf("backward %.0f ms, jitter up to %.1f ms per gradient and rank, cycle %.1f ms, %d steady steps\n",
              settings.backward_ms, settings.jitter_ms, settings.cycle_ms, settings.steps - 1);
  std::printf("%-18s %6s %8s %12s %11s %9s %12s %10s %9s %9s\n", "model", "ranks", "tensors", "cycles/step", "us/cycle",
              "vs first", "ms/step", "KiB/cycle", "msgs", "shortcut");
  nlohmann::json all = nlohmann::json::array();
  for (const auto& [name, gradients] : models) {
    double first_cpu = 0;  // of the first world size listed: the ratio's base
    for (int n : ranks) {
      const Result r = simulate(name, gradients, n, settings);
      if (first_cpu == 0) first_cpu = r.cpu_us_per_cycle;
      std::printf("%-18s %6d %8zu %12.1f %11.1f %8.1fx %12.2f %10.1f %9.0f %8.0f%%\n", name.c_str(), n,
                  gradients.size(), r.cycles_per_step, r.cpu_us_per_cycle, r.cpu_us_per_cycle / first_cpu,
                  r.cpu_ms_per_step, r.bytes_per_cycle / 1024, r.messages_per_cycle, 100 * r.shortcut_fraction);
      all.push_back({{"model", name},
                     {"ranks", n},
                     {"tensors", gradients.size()},
                     {"cycles_per_step", r.cycles_per_step},
                     {"rank0_cpu_us_per_cycle", r.cpu_us_per_cycle},
                     {"rank0_cpu_ms_per_step", r.cpu_ms_per_step},
                     {"control_bytes_per_cycle", r.bytes_per_cycle},
                     {"messages_per_cycle", r.messages_per_cycle},
                     {"shortcut_fraction", r.shortcut_fraction}});
    }
  }
  if (!json_path.empty()) std::ofstream(json_path) << all.dump(2) << "\n";
  return 0;
}
