// dtrain-bench-elastic-world: the elastic driver's rules (launch/elastic_world.h) with N workers,
// as `dtrain run --min-np` would feed them: N workers started on N/8 hosts join the first round,
// a tenth of them are killed and the survivors form a smaller world, replacements start on newly
// discovered hosts and join the next. Reported per phase: the CPU time of the rules' calls and
// the round formed; per steady-state decide() (the driver calls it on every event and tick) its
// cost. Exits non-zero when a round is not what the rules promise.
//
//   dtrain-bench-elastic-world [--workers 1000,4000]
#include <signal.h>
#include <time.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "launch/elastic_world.h"

namespace {

using dtrain::launch::ElasticDecision;
using dtrain::launch::ElasticSettings;
using dtrain::launch::ElasticWorld;
using dtrain::launch::HostSlots;

double cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

std::vector<HostSlots> hosts(const std::string& prefix, int count, int slots) {
  std::vector<HostSlots> list;
  for (int h = 0; h < count; ++h) list.push_back({prefix + std::to_string(h), slots});
  return list;
}

// Starts a worker on every host slot the rules offer; returns their numbers.
std::vector<int> fill(ElasticWorld& world, ElasticWorld::Clock::time_point now) {
  std::vector<int> started;
  for (const std::string& host : world.hosts_to_fill(now)) started.push_back(world.worker_started(host, true));
  return started;
}

bool check(bool ok, const std::string& what) {
  if (!ok) std::fprintf(stderr, "dtrain-bench-elastic-world: %s\n", what.c_str());
  return ok;
}

bool run(int workers) {
  constexpr int kSlots = 8;
  const int host_count = (workers + kSlots - 1) / kSlots;
  ElasticSettings settings;
  settings.min_np = workers / 2;
  settings.max_np = workers;
  auto now = ElasticWorld::Clock::now();
  bool ok = true;

  double start = cpu_ms();
  ElasticWorld world(settings, hosts("host-", host_count, kSlots), now);
  std::vector<int> live = fill(world, now);
  for (int w : live) world.worker_asked(w, 0);
  ElasticDecision first = world.decide(now);
  const double join_ms = cpu_ms() - start;
  ok &= check(first.round && first.round->size() == workers, "the first round is not every worker");

  start = cpu_ms();
  constexpr int kTicks = 1000;
  for (int i = 0; i < kTicks; ++i) ok &= check(!world.decide(now).round, "a round formed with nothing asked");
  const double tick_us = (cpu_ms() - start) * 1000 / kTicks;

  // A tenth killed (by a signal the driver did not send: lost), the rest ask for a new round.
  start = cpu_ms();
  std::vector<int> survivors;
  for (std::size_t i = 0; i < live.size(); ++i) {
    if (i % 10 == 3) {
      ok &= check(world.worker_ended(live[i], SIGKILL, now) == ElasticWorld::Ending::kLost, "a killed worker not lost");
    } else {
      survivors.push_back(live[i]);
    }
  }
  for (int w : survivors) world.worker_asked(w, 1);
  ElasticDecision shrunk = world.decide(now);
  const double shrink_ms = cpu_ms() - start;
  ok &= check(shrunk.round && shrunk.round->size() == static_cast<int>(survivors.size()),
              "the shrunk round is not every survivor");

  // Replacements on newly discovered hosts (the lost ones cool down), then the next round.
  start = cpu_ms();
  world.set_discovered_hosts(hosts("spare-", host_count / 10 + 1, kSlots));
  const std::vector<int> added = fill(world, now);
  for (int w : added) world.worker_asked(w, 0);
  const ElasticDecision waiting = world.decide(now);  // rank 0 learns of them at its next commit
  for (int w : survivors) world.worker_asked(w, 2);
  const ElasticDecision grown = world.decide(now);
  const double grow_ms = cpu_ms() - start;
  ok &= check(waiting.waiting_to_join == static_cast<int>(added.size()), "rank 0 not told who waits to join");
  ok &= check(grown.round && grown.round->size() == workers, "the grown round is not max_np workers");

  std::printf("%8d %8d %16.2f %14.2f %16.2f %16.2f %10s\n", workers, host_count, join_ms, tick_us, shrink_ms, grow_ms,
              ok ? "yes" : "NO");
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> workers = {1000, 4000};
  CLI::App app{"dtrain-bench-elastic-world: the elastic driver's rules with N workers joining and leaving"};
  app.add_option("--workers", workers, "World sizes")->delimiter(',')->check(CLI::Range(10, 1000000));
  CLI11_PARSE(app, argc, argv);
  std::printf("%8s %8s %16s %14s %16s %16s %10s\n", "workers", "hosts", "join+round ms", "tick us", "lose 10% ms",
              "replace ms", "rounds ok");
  bool ok = true;
  for (int n : workers) ok &= run(n);
  return ok ? 0 : 1;
}
