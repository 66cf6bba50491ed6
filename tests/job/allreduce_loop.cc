// A rank that trains until something stops it, as far as the network is concerned: one small
// allreduce after another across every rank, forever. Prints "rank R: ready" after the first,
// when the ranks are known to be connected; a failed collective (a peer cut off, once
// DTRAIN_TIMEOUT_S has passed) ends it with status 1. The job tests cut a host off under it.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "dtrain/dtrain.h"

int main() {
  try {
    dtrain::init();
    std::vector<float> values(256, 1.0f);
    for (long step = 0;; ++step) {
      dtrain::allreduce("loop", {values.data(), dtrain::DataType::kFloat32, {256}},
                        {values.data(), dtrain::DataType::kFloat32, {256}});
      if (step == 0) {
        std::printf("rank %d: ready\n", dtrain::rank());
        std::fflush(stdout);
      }
      // A step's pause: the collectives keep the links busy without taking the machine's cores.
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const dtrain::Error& e) {
    std::fprintf(stderr, "job_allreduce_loop: %s\n", e.what());
    return 1;
  }
}
