// The clock of the scaling benchmarks: `warmup` untimed steps, then `steps` timed ones, every
// rank starting and ending together (a barrier on each side), so the time is the job's.
#pragma once

#include <chrono>
#include <functional>

#include "dtrain/dtrain.h"

namespace dtrain::bench {

inline double seconds_for_steps(const std::function<void()>& step, int warmup, int steps) {
  for (int i = 0; i < warmup; ++i) step();
  dtrain::barrier();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) step();
  dtrain::barrier();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace dtrain::bench
