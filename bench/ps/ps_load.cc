// dtrain-bench-ps-load: the parameter servers with many workers at once, on loopback in one
// process: S servers (the same ParameterServer `dtrain ps-server` runs, asynchronous updates)
// and N worker threads, each with its own PsClient (its own channels and heartbeat). Every
// worker registers, then for each step pushes its gradient of every piece and pulls the new
// values; the chief waits for the others to leave. Reported per N: the time until every worker
// has registered, the time per step (the slowest worker's), pushes per second, errors, and the
// process's memory growth. Exits non-zero on any error.
//
//   dtrain-bench-ps-load [--workers 64,256] [--servers 2] [--elements 262144] [--steps 5]
#include <CLI/CLI.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ps/ps_client.h"
#include "ps/ps_error.h"
#include "ps/ps_service.h"

namespace {

using Clock = std::chrono::steady_clock;
using dtrain::ps::ParameterServer;
using dtrain::ps::Piece;
using dtrain::ps::PsClient;
using dtrain::ps::PsClientOptions;
using dtrain::ps::ShardPlan;

long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Every piece pushed at once, then waited for: a worker's step.
std::string push_all(PsClient& client, std::int64_t step, const std::vector<float>& gradient) {
  std::mutex mutex;
  std::condition_variable all_done;
  std::size_t left = client.plan().pieces().size();
  std::string first_error;
  for (std::size_t p = 0; p < client.plan().pieces().size(); ++p) {
    const Piece& piece = client.plan().pieces()[p];
    client.push(static_cast<int>(p), step, 0.01, gradient.data() + piece.offset,
                [&](const std::string& error, std::string&&) {
                  std::lock_guard lock(mutex);
                  if (!error.empty() && first_error.empty()) first_error = error;
                  if (--left == 0) all_done.notify_one();
                });
  }
  std::unique_lock lock(mutex);
  all_done.wait(lock, [&] { return left == 0; });
  return first_error;
}

struct Outcome {
  double register_s = 0;  // until every worker has registered
  double step_s = 0;      // the slowest worker's mean step after that
  long pushes = 0;
  int errors = 0;
  std::string first_error;
  long memory_kib = 0;
};

Outcome run(int workers, int servers, std::int64_t elements, int steps) {
  Outcome outcome;
  const long memory_before = resident_kib();
  std::vector<std::unique_ptr<ParameterServer>> running;
  std::vector<std::string> addresses;
  for (int s = 0; s < servers; ++s) {
    dtrain::ps::ParameterStoreOptions options;
    options.server = s;
    running.push_back(std::make_unique<ParameterServer>(options, "load-test", "127.0.0.1:0"));
    addresses.push_back("127.0.0.1:" + std::to_string(running.back()->port()));
  }
  const ShardPlan plan({{"weights", elements}}, servers);
  const std::vector<float> initial(static_cast<std::size_t>(elements), 0.5f);
  std::atomic<int> registered{0};
  std::atomic<long> pushes{0};
  std::mutex mutex;
  std::vector<double> step_seconds(static_cast<std::size_t>(workers), 0);
  Clock::time_point all_registered;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        PsClientOptions options;
        options.worker = w;
        options.num_workers = workers;
        options.servers = addresses;
        options.token = "load-test";
        PsClient client(options, plan);
        client.register_worker(
            {}, [&](const Piece& piece) { return initial.data() + piece.offset; }, 0);
        if (++registered == workers) {
          std::lock_guard lock(mutex);
          all_registered = Clock::now();
        }
        const std::vector<float> gradient(static_cast<std::size_t>(elements), 0.001f * static_cast<float>(w + 1));
        const auto stepping = Clock::now();
        for (int step = 0; step < steps; ++step) {
          const std::string error = push_all(client, step, gradient);
          if (!error.empty()) throw dtrain::ps::PsError(error);
          pushes += static_cast<long>(plan.pieces().size());
          std::vector<int> every;
          for (std::size_t p = 0; p < plan.pieces().size(); ++p) every.push_back(static_cast<int>(p));
          client.pull(every);
        }
        step_seconds[static_cast<std::size_t>(w)] = seconds_since(stepping) / steps;
        if (w == 0) {
          client.wait_for_other_workers(600);
        } else {
          client.leave();
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(mutex);
        if (outcome.errors++ == 0) outcome.first_error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  outcome.register_s = registered == workers ? std::chrono::duration<double>(all_registered - start).count() : -1;
  for (double s : step_seconds) outcome.step_s = std::max(outcome.step_s, s);
  outcome.pushes = pushes;
  outcome.memory_kib = resident_kib() - memory_before;
  return outcome;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> workers = {64, 256};
  int servers = 2;
  std::int64_t elements = 1 << 18;
  int steps = 5;
  CLI::App app{"dtrain-bench-ps-load: the parameter servers with N workers at once (loopback)"};
  app.add_option("--workers", workers, "Worker counts")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--servers", servers, "Parameter servers")->check(CLI::Range(1, 64));
  app.add_option("--elements", elements, "Floats in the model")->check(CLI::Range(1, 1 << 28));
  app.add_option("--steps", steps, "Steps per worker")->check(CLI::Range(1, 1000));
  CLI11_PARSE(app, argc, argv);
  std::printf("%d servers, %lld floats (%.1f MiB) per worker and step, %d steps\n", servers,
              static_cast<long long>(elements), static_cast<double>(elements) * 4 / (1 << 20), steps);
  std::printf("%8s %12s %10s %12s %8s %12s\n", "workers", "register s", "step s", "pushes/s", "errors", "memory MiB");
  bool ok = true;
  for (int n : workers) {
    const Outcome o = run(n, servers, elements, steps);
    std::printf("%8d %12.2f %10.3f %12.0f %8d %12.1f\n", n, o.register_s, o.step_s,
                o.step_s > 0 ? static_cast<double>(o.pushes) / (o.step_s * steps) : 0.0, o.errors,
                static_cast<double>(o.memory_kib) / 1024);
    if (!o.first_error.empty()) std::printf("  first error: %s\n", o.first_error.c_str());
    std::fflush(stdout);
    ok = ok && o.errors == 0;
  }
  return ok ? 0 : 1;
}
