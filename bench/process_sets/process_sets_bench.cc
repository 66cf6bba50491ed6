// dtrain-bench-process-sets: what a process set costs against the global set. In one run, on
// the same ranks, a blocking float32 allreduce of each size goes through the global set and
// through a process set of the same ranks (its own loop and connections), rounds alternating
// which goes first; rank 0 prints the median and range over the rounds and the ratio
// set / global. (That sets run at the same time is tested, not timed here: on a machine with
// fewer cores than ranks, two sets' reductions share the cores either way.)
//
//   dtrain run -np 4 -- build/apps/dtrain-bench-process-sets [--rounds N]
//
// bench/process_sets/overhead runs it on one host and on two loopback hosts.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "dtrain/dtrain.h"

namespace {

using Clock = std::chrono::steady_clock;

// Seconds per allreduce of `count` floats over `set`, `iterations` times after a warm-up
// (fixed counts: every rank runs the same number).
double seconds_per_allreduce(const dtrain::ProcessSet& set, std::size_t count, int iterations,
                             const std::string& name) {
  std::vector<float> data(count, 1.0f);
  const dtrain::TensorView view{data.data(), dtrain::DataType::kFloat32, {static_cast<std::int64_t>(count)}};
  for (int i = 0; i < 20; ++i) dtrain::allreduce(name, view, view, {dtrain::ReduceOp::kSum}, set);
  dtrain::barrier(set);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) dtrain::allreduce(name, view, view, {dtrain::ReduceOp::kSum}, set);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count() / iterations;
  // Every member reports the first member's figure: the slowest sets the pace anyway.
  double reported = seconds;
  const dtrain::TensorView one{&reported, dtrain::DataType::kFloat64, {1}};
  dtrain::broadcast("bench.time", one, set.ranks().front(), set);
  return reported;
}

struct Spread {
  double median, low, high;
};

Spread spread_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return {values[values.size() / 2], values.front(), values.back()};
}

int iterations_for(std::size_t bytes) { return bytes <= (64u << 10) ? 2000 : bytes <= (1u << 20) ? 200 : 20; }

void overhead(int rounds) {
  std::vector<int> everyone(static_cast<std::size_t>(dtrain::size()));
  for (int r = 0; r < dtrain::size(); ++r) everyone[static_cast<std::size_t>(r)] = r;
  const dtrain::ProcessSet global, same_ranks = dtrain::add_process_set(everyone);
  if (dtrain::rank() == 0) {
    std::printf("allreduce, %d ranks, float32: µs per call, median [min-max] over %d rounds\n", dtrain::size(), rounds);
    std::printf("%10s %26s %26s %9s\n", "bytes", "global set", "process set (same ranks)", "set/global");
  }
  for (std::size_t bytes : {std::size_t{4} << 10, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{16} << 20}) {
    std::vector<double> through_global, through_set;
    for (int round = 0; round < rounds; ++round) {
      const std::string tag = std::to_string(bytes);
      auto measure_global = [&] {
        through_global.push_back(seconds_per_allreduce(global, bytes / 4, iterations_for(bytes), "global." + tag));
      };
      auto measure_set = [&] {
        through_set.push_back(seconds_per_allreduce(same_ranks, bytes / 4, iterations_for(bytes), "set." + tag));
      };
      if (round % 2 == 0) {
        measure_global();
        measure_set();
      } else {
        measure_set();
        measure_global();
      }
    }
    const Spread g = spread_of(through_global), s = spread_of(through_set);
    if (dtrain::rank() == 0) {
      std::printf("%10zu %9.1f [%6.1f-%6.1f] %9.1f [%6.1f-%6.1f] %9.3f\n", bytes, g.median * 1e6, g.low * 1e6,
                  g.high * 1e6, s.median * 1e6, s.low * 1e6, s.high * 1e6, s.median / g.median);
    }
  }
  dtrain::remove_process_set(same_ranks);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"dtrain-bench-process-sets: a process set's allreduce against the global set's"};
  int rounds = 5;
  app.add_option("--rounds", rounds, "rounds, alternating which goes first")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  dtrain::init();
  overhead(rounds);
  dtrain::shutdown();
  return 0;
}
