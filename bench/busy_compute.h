// Busy work standing in for a training step's computation in the runtime benchmarks: it holds
// the core as a convolution would (a sleeping rank would leave its core to the runtime's
// threads, which training does not).
#pragma once

#include <chrono>

namespace dtrain::bench {

inline void compute_for(double ms) {
  if (ms <= 0) return;
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  while (Clock::now() < until) {}
}

}  // namespace dtrain::bench
