// dtrain-bench-negotiation: the runtime's own negotiation (coordinator, response cache, cycle
// reports and plans as encoded on the wire, the shortcut's summaries and their reduction by
// recursive doubling) driven with N simulated ranks, each submitting a model's gradients as
// backward produces them, with arrival jitter between ranks. What it measures per cycle is
// what rank 0 does in a real job (its summary and its share of the reduction; when the
// coordinator plans, decoding every rank's report, planning, encoding the plan: its CPU time
// on this thread), and what travels on the control plane (bytes, messages). docs/scaling.md
// reads it.
//
//   dtrain-bench-negotiation [--ranks 2,8,64,256,1024,4096] [--path reduction|coordinator]
//                            [--steps 6] [--jitter-ms 2] [--backward-ms 60] [--cycle-ms 1] [--json FILE]
#include <time.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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
#include "runtime/transport/recursive_doubling.h"

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

// Which way a cycle is planned: every cycle through rank 0 (the coordinator's path: what a
// transport without the shortcut does, MPI's), or the shortcut's reduction of summaries first.
enum class Path { kCoordinator, kReduction };

// One cycle as rank 0 lives it.
struct Cycle {
  double rank0_cpu_us = 0;     // its summary, its combines; when planned: decode, plan, encode
  std::size_t wire_bytes = 0;  // every message of the control plane this cycle
  int messages = 0;
  bool shortcut = false;  // planned without the coordinator
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

// A simulated rank: when each of its gradients is ready, how many it has submitted, and the
// cached ones it holds (submitted, neither run nor handed to the coordinator).
struct Rank {
  std::vector<std::pair<double, std::size_t>> ready;  // (time, gradient), in time order
  std::size_t submitted = 0;
  std::vector<std::uint64_t> held;
};

// The shortcut's reduction as MeshTransport runs it (recursive_doubling.h), every rank's
// partial result replayed. Returns the combination and counts the messages into `cycle`;
// `rank0_received` gets what rank 0 combined into its own summary, in order.
std::vector<char> reduce_summaries(std::vector<std::vector<char>> summaries, Cycle& cycle,
                                   std::vector<std::vector<char>>& rank0_received) {
  const int n = static_cast<int>(summaries.size());
  const std::vector<std::vector<char>> results =
      replay_doubling(std::move(summaries), [&](int rank, std::vector<char>& into, const std::vector<char>& theirs) {
        cycle.wire_bytes += theirs.size();
        ++cycle.messages;
        if (rank == 0) rank0_received.push_back(theirs);
        combine_summaries(into, theirs);
      });
  for (int r = 0; r < n; ++r) {  // the result sent back to each rank that handed its message in
    if (doubling_schedule(r, n).hands_to >= 0) {
      cycle.wire_bytes += results[static_cast<std::size_t>(r)].size();
      ++cycle.messages;
    }
  }
  return results[0];
}

Result simulate(const std::string& model, const std::vector<Gradient>& gradients, int ranks, Path path,
                const Settings& s) {
  ResponseCache cache(1024);  // every rank's cache is this one: they apply the same plans in order
  Coordinator coordinator(ranks, cache, StallInspector(3600, 0), nullptr);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> jitter(0, s.jitter_ms);
  const std::size_t count = gradients.size();
  std::vector<Cycle> steady;
  std::vector<Rank> rank_states(static_cast<std::size_t>(ranks));
  for (int step = 0; step < s.steps; ++step) {
    for (Rank& rank : rank_states) {
      rank.ready.clear();
      rank.submitted = 0;
      for (std::size_t k = 0; k < count; ++k) {
        rank.ready.emplace_back(
            s.backward_ms * static_cast<double>(k + 1) / static_cast<double>(count) + jitter(random), k);
      }
      std::sort(rank.ready.begin(), rank.ready.end());
    }
    std::size_t planned = 0;
    for (double now = s.cycle_ms; planned < count; now += s.cycle_ms) {
      std::vector<CycleReport> reports(static_cast<std::size_t>(ranks));
      for (int r = 0; r < ranks; ++r) {
        Rank& rank = rank_states[static_cast<std::size_t>(r)];
        CycleReport& report = reports[static_cast<std::size_t>(r)];
        for (; rank.submitted < count && rank.ready[rank.submitted].first <= now; ++rank.submitted) {
          const Request request = request_of(gradients[rank.ready[rank.submitted].second], r);
          if (auto position = cache.find(request)) {
            set_bit(rank.held, *position);
          } else {
            report.requests.push_back(request);
          }
        }
        report.cache_bits = rank.held;
      }
      Cycle cycle;
      std::optional<std::vector<std::uint32_t>> agreed;
      if (path == Path::kReduction) {
        std::vector<std::vector<char>> summaries(static_cast<std::size_t>(ranks));
        CycleSummary own;  // rank 0's
        for (int r = 0; r < ranks; ++r) {
          CycleSummary summary;
          summary.needs_coordinator =
              !reports[static_cast<std::size_t>(r)].requests.empty() || (r == 0 && !coordinator.idle());
          summary.cache_bits = rank_states[static_cast<std::size_t>(r)].held;
          summaries[static_cast<std::size_t>(r)] = encode(summary, 4096);
          if (r == 0) own = summary;
        }
        std::vector<std::vector<char>> received;
        const std::vector<char> combined = reduce_summaries(std::move(summaries), cycle, received);
        // Rank 0's part, timed in one piece (a clock read costs about what a combine does):
        // its summary encoded, what it received combined in, the plan read off the result.
        const double start = thread_cpu_us();
        std::vector<char> mine = encode(own, 4096);
        for (const std::vector<char>& theirs : received) combine_summaries(mine, theirs);
        agreed = agreed_positions(mine);
        cycle.rank0_cpu_us += thread_cpu_us() - start;
        if (mine != combined) {
          std::fprintf(stderr, "dtrain-bench-negotiation: rank 0's replay differs from the reduction\n");
          std::exit(1);
        }
      }
      CyclePlan plan;
      if (agreed) {
        cycle.shortcut = true;
        for (const std::uint32_t position : *agreed) {
          plan.items.emplace_back().cache_position = static_cast<std::int32_t>(position);
        }
        for (Rank& rank : rank_states) {
          for (const std::uint32_t position : *agreed)
            rank.held[position / 64] &= ~(std::uint64_t{1} << (position % 64));
        }
      } else {
        // Rank 0: every report decoded, the plan made and encoded for the broadcast.
        std::vector<std::vector<char>> encoded;
        for (const CycleReport& report : reports) encoded.push_back(encode(report));
        const double start = thread_cpu_us();
        std::vector<CycleReport> decoded;
        decoded.reserve(encoded.size());
        for (const auto& bytes : encoded) decoded.push_back(decode_report(bytes));
        plan = coordinator.plan(decoded, std::chrono::steady_clock::now());
        const std::vector<char> plan_bytes = encode(plan);
        cycle.rank0_cpu_us += thread_cpu_us() - start;
        for (const auto& bytes : encoded) cycle.wire_bytes += bytes.size();
        cycle.wire_bytes += plan_bytes.size() * static_cast<std::size_t>(ranks - 1);
        cycle.messages += 2 * (ranks - 1);
        for (Rank& rank : rank_states) rank.held.clear();  // the coordinator holds them now
      }
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
  double bytes = 0, messages = 0, shortcut = 0, cpu_total = 0;
  for (const Cycle& c : steady) {
    cpu.push_back(c.rank0_cpu_us);
    cpu_total += c.rank0_cpu_us;
    bytes += static_cast<double>(c.wire_bytes);
    messages += c.messages;
    shortcut += c.shortcut ? 1 : 0;
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
          shortcut / cycles};
}

}  // namespace

int main(int argc, char** argv) {
  Settings settings;
  std::vector<int> ranks = {2, 8, 64, 256, 1024, 4096};
  std::string path_name = "reduction";
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
  app.add_option("--path", path_name,
                 "reduction: the shortcut's reduction of summaries first (TCP mesh, shared memory); "
                 "coordinator: every cycle through rank 0 (MPI)")
      ->check(CLI::IsMember({"reduction", "coordinator"}));
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
  const Path path = path_name == "reduction" ? Path::kReduction : Path::kCoordinator;
  std::printf(
      "path: %s; backward %.0f ms, jitter up to %.1f ms per gradient and rank, cycle %.1f ms, %d steady steps\n",
      path_name.c_str(), settings.backward_ms, settings.jitter_ms, settings.cycle_ms, settings.steps - 1);
  std::printf("%-18s %6s %8s %12s %11s %9s %12s %10s %9s %9s\n", "model", "ranks", "tensors", "cycles/step", "us/cycle",
              "vs first", "ms/step", "KiB/cycle", "msgs", "shortcut");
  nlohmann::json all = nlohmann::json::array();
  for (const auto& [name, gradients] : models) {
    std::int64_t gradient_elements = 0;
    for (const Gradient& g : gradients) gradient_elements += g.elements;
    double first_cpu = 0;  // of the first world size listed: the ratio's base
    for (int n : ranks) {
      const Result r = simulate(name, gradients, n, path, settings);
      if (first_cpu == 0) first_cpu = r.cpu_us_per_cycle;
      std::printf("%-18s %6d %8zu %12.1f %11.1f %8.1fx %12.2f %10.1f %9.0f %8.0f%%\n", name.c_str(), n,
                  gradients.size(), r.cycles_per_step, r.cpu_us_per_cycle, r.cpu_us_per_cycle / first_cpu,
                  r.cpu_ms_per_step, r.bytes_per_cycle / 1024, r.messages_per_cycle, 100 * r.shortcut_fraction);
      all.push_back({{"model", name},
                     {"path", path_name},
                     {"ranks", n},
                     {"tensors", gradients.size()},
                     {"gradient_bytes", 4 * gradient_elements},  // float32
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
