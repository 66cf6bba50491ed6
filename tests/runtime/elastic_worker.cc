// A small elastic training loop for the elastic job tests: each step allreduces 1 (so the
// running total counts the ranks of every step), commits every K steps, and reports what a
// reset changed. Printed lines the tests read:
//   "worker W pid P"                          at start (stderr)
//   "rank R/S step N"                         every step
//   "reset: S1 -> S2 ranks, round N, resuming at step A, redoing B steps"
//   "done: steps N total T resets R redone D" at the end, rank 0
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>

#include "dtrain/dtrain.h"
#include "dtrain/elastic.h"

namespace {

struct Progress {
  long step = 0;
  double total = 0;
};

// The counters are the whole state: saved by copy, synced from rank 0 as bytes.
class CounterState final : public dtrain::elastic::State {
 public:
  Progress now, committed;
  void save() override { committed = now; }
  void restore() override { now = committed; }
  void sync() override {
    std::string bytes(reinterpret_cast<const char*>(&now), sizeof(now));
    bytes = dtrain::broadcast_object(bytes, 0, "elastic_worker.state");
    now = *reinterpret_cast<const Progress*>(bytes.data());
    committed = now;
  }
};

long flag(int argc, char** argv, const std::string& name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return std::stol(argv[i + 1]);
  }
  return fallback;
}

std::string text_flag(int argc, char** argv, const std::string& name) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (argv[i] == name) return argv[i + 1];
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const long steps = flag(argc, argv, "--steps", 60);
  const long commit_every = flag(argc, argv, "--commit-every", 5);
  const long step_ms = flag(argc, argv, "--step-ms", 50);
  const long fail_at = flag(argc, argv, "--fail-at", -1);
  // Every rank waits before this step until --hold-file exists (a test's gate: the world must
  // still be training when something the test waits for has happened).
  const long hold_at = flag(argc, argv, "--hold-at-step", -1);
  const std::string hold_file = text_flag(argc, argv, "--hold-file");
  std::fprintf(stderr, "worker %s pid %d\n",
               std::getenv("DTRAIN_ELASTIC_WORKER") ? std::getenv("DTRAIN_ELASTIC_WORKER") : "-",
               static_cast<int>(::getpid()));

  CounterState state;
  long resets = 0, redone = 0, reached = 0;  // reached: the most steps this process completed
  state.on_reset([&](const dtrain::elastic::WorldChange& change) {
    ++resets;
    const long again = change.restored ? reached - state.now.step : 0;
    redone += again;
    std::printf("reset: %d -> %d ranks, round %d, resuming at step %ld, redoing %ld steps\n", change.previous_size,
                change.size, change.round, state.now.step, again);
    std::fflush(stdout);
  });
  try {
    dtrain::elastic::run(state, [&] {
      while (state.now.step < steps) {
        while (state.now.step == hold_at && !std::filesystem::exists(hold_file)) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        if (state.now.step == fail_at)
          throw std::runtime_error("the program's own failure at step " + std::to_string(fail_at));
        float one = 1.0f;
        dtrain::TensorView view{&one, dtrain::DataType::kFloat32, {1}};
        dtrain::ReduceOptions sum;
        sum.op = dtrain::ReduceOp::kSum;
        dtrain::allreduce("elastic_worker.count", view, view, sum);
        state.now.total += one;
        std::printf("rank %d/%d step %ld\n", dtrain::rank(), dtrain::size(), state.now.step);
        std::fflush(stdout);
        std::this_thread::sleep_for(std::chrono::milliseconds(step_ms));
        ++state.now.step;
        reached = std::max(reached, state.now.step);
        if (state.now.step % commit_every == 0) state.commit();
      }
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "elastic_worker: %s\n", e.what());
    return 1;
  }
  if (dtrain::rank() == 0) {
    std::printf("done: steps %ld total %.0f resets %ld redone %ld\n", state.now.step, state.now.total, resets, redone);
  }
  dtrain::shutdown();
  return 0;
}
