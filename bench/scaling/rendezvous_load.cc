// dtrain-bench-rendezvous: the rendezvous store (the launcher's, src/rendezvous/) as N ranks
// meet at init(), on loopback in one process: N threads, each with its own client and
// connection, do what a rank's init does against the store, all at once. Two patterns:
//   world (the default): report ready, publish a TCP-mesh address and read every other rank's
//     in one batched wait, publish a second address and read every rank's in one wait
//     (what forming a world needs of the store: N requests of each kind);
//   gloo: the same, but the second exchange as Gloo's full mesh reads it, one wait per peer
//     (N^2 requests in all).
// Then every rank leaves (its client and connection closed) and the same number meets again on
// the same store under new keys, as after an elastic restart: leaving must give back what
// joining took. Reported per world size and round: the time until every rank has met (a full
// world), the requests that took, the errors, and the process's memory growth over the round
// (the server's threads included; in the second round, what the first's leaving did not return).
//
//   dtrain-bench-rendezvous [--ranks 64,256,1024] [--pattern world|gloo] [--timeout-s 120] [--json FILE]
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_server.h"

namespace {

using Clock = std::chrono::steady_clock;

// The resident memory of this process in KiB (server and clients together).
long resident_kib() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return 0;
}

struct Outcome {
  int ranks;
  double seconds;   // until the last rank has met every peer it reads
  long requests;    // requests that returned what was asked (a wait the store answered 404 not counted)
  int errors;       // ranks whose meeting failed
  long memory_kib;  // resident growth over the meeting
  std::string first_error;
};

std::vector<std::string> keys(const std::string& prefix, int first, int end) {
  std::vector<std::string> names;
  for (int r = first; r < end; ++r) names.push_back(prefix + std::to_string(r));
  return names;
}

// Rank r's init against the store, as the runtime's transports do it.
// Keys of a round live under `job` ("round1/", "round2/").
void meet(int rank, int ranks, int port, const std::string& job, bool gloo_pattern, std::chrono::milliseconds timeout,
          std::atomic<long>& requests) {
  dtrain::rendezvous::RendezvousClient store("127.0.0.1", port, "load-test");
  store.report_ready(rank);
  const std::string address = "10.0.0." + std::to_string(rank % 250) + ":" + std::to_string(20000 + rank);
  store.set(job + "mesh/" + std::to_string(rank), address);  // tcp_mesh: publish, then read every other rank's
  std::vector<std::string> others = keys(job + "mesh/", 0, ranks);
  others.erase(others.begin() + rank);
  if (!others.empty()) store.wait_get_all(others, timeout);
  store.set(job + "all/" + std::to_string(rank), address);
  if (!gloo_pattern) {
    store.wait_get_all(keys(job + "all/", 0, ranks), timeout);
    requests += 5;
    return;
  }
  for (int peer = 0; peer < ranks; ++peer) {
    if (peer != rank) store.wait_get(job + "all/" + std::to_string(peer), timeout);
  }
  requests += 4 + (ranks - 1);
}

// One round: `ranks` threads meet on the store at `port` and leave (their clients closed).
Outcome run(int ranks, int port, const std::string& job, bool gloo_pattern, double timeout_s) {
  const long memory_before = resident_kib();
  std::atomic<long> requests{0};
  std::atomic<int> errors{0};
  std::string first_error;
  std::atomic_flag have_error = ATOMIC_FLAG_INIT;
  const auto timeout = std::chrono::milliseconds(static_cast<long>(timeout_s * 1000));
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        meet(r, ranks, port, job, gloo_pattern, timeout, requests);
      } catch (const std::exception& e) {
        ++errors;
        if (!have_error.test_and_set()) first_error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {ranks, seconds, requests.load(), errors.load(), resident_kib() - memory_before, first_error};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks = {64, 256, 1024};
  double timeout_s = 120;
  std::string pattern = "world";
  std::string json_path;
  CLI::App app{"dtrain-bench-rendezvous: the rendezvous store with N ranks meeting at once (loopback)"};
  app.add_option("--ranks", ranks, "World sizes")->delimiter(',')->check(CLI::PositiveNumber);
  app.add_option("--timeout-s", timeout_s, "How long a rank waits for a peer's key")->check(CLI::PositiveNumber);
  app.add_option("--pattern", pattern, "world: batched waits; gloo: one wait per peer, as Gloo's full mesh")
      ->check(CLI::IsMember({"world", "gloo"}));
  app.add_option("--json", json_path, "Also write the results here");
  CLI11_PARSE(app, argc, argv);

  std::printf("%6s %7s %10s %12s %12s %8s %12s\n", "ranks", "round", "seconds", "requests", "requests/s", "errors",
              "memory MiB");
  nlohmann::json all = nlohmann::json::array();
  int failed_rounds = 0;
  for (int n : ranks) {
    dtrain::rendezvous::RendezvousServer server("load-test", n);
    const int port = server.start("127.0.0.1", 0);
    for (int round = 1; round <= 2; ++round) {
      const Outcome o = run(n, port, "round" + std::to_string(round) + "/", pattern == "gloo", timeout_s);
      failed_rounds += o.errors > 0;
      std::printf("%6d %7d %10.2f %12ld %12.0f %8d %12.1f\n", o.ranks, round, o.seconds, o.requests,
                  static_cast<double>(o.requests) / o.seconds, o.errors, static_cast<double>(o.memory_kib) / 1024);
      if (!o.first_error.empty()) std::printf("  first error: %s\n", o.first_error.c_str());
      std::fflush(stdout);
      all.push_back({{"ranks", o.ranks},
                     {"round", round},
                     {"pattern", pattern},
                     {"seconds", o.seconds},
                     {"requests", o.requests},
                     {"errors", o.errors},
                     {"memory_kib", o.memory_kib},
                     {"first_error", o.first_error}});
    }
  }
  if (!json_path.empty()) std::ofstream(json_path) << all.dump(2) << "\n";
  return failed_rounds == 0 ? 0 : 1;
}
