#include "launch/elastic_driver.h"

#include <unistd.h>

#include <cstdio>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "launch/host_discovery.h"
#include "rendezvous/rendezvous_server.h"

namespace dtrain::launch {
namespace {

void say(const std::string& line) {
  const std::string text = "dtrain run: elastic: " + line + "\n";
  [[maybe_unused]] ssize_t n = ::write(2, text.data(), text.size());
}

std::string describe_members(const rendezvous::ElasticRound& round) {
  std::vector<std::string> members;
  for (int rank = 0; rank < round.size(); ++rank) {
    const auto& m = round.members[static_cast<std::size_t>(rank)];
    members.push_back(fmt::format("rank {} = worker {} on {}", rank, m.worker, m.host));
  }
  return fmt::format("{}", fmt::join(members, ", "));
}

}  // namespace

ElasticDriver::ElasticDriver(ElasticDriverOptions options, std::vector<HostSlots> hosts,
                             rendezvous::RendezvousServer& store)
    : options_(std::move(options)),
      world_(options_.settings, std::move(hosts), ElasticWorld::Clock::now()),
      store_(store) {}

bool ElasticDriver::worker_ended(const RankPlacement& worker, int wait_status) {
  const std::size_t losses_before = world_.losses().size();
  switch (world_.worker_ended(worker.rank, wait_status, ElasticWorld::Clock::now())) {
    case ElasticWorld::Ending::kLost:
      if (world_.losses().size() > losses_before) say(world_.losses().back() + "; the job goes on without it");
      return true;
    case ElasticWorld::Ending::kFinished: return true;
    case ElasticWorld::Ending::kFatal: return false;
  }
  return false;
}

ElasticControl::Actions ElasticDriver::step() {
  const auto now = ElasticWorld::Clock::now();
  Actions actions;
  discover(now);
  for (const std::string& host : world_.hosts_to_fill(now)) {
    const int id = world_.worker_started(host, options_.is_remote(host));
    workers_started_ = id + 1;
    WorkerLaunch launch = options_.make_launch(id, host);
    launch.placement.rank = id;
    spdlog::debug("elastic: starting worker {} on {}", id, host);
    actions.start.push_back(std::move(launch));
  }
  read_requests();
  ElasticDecision decision = world_.decide(now);
  const auto& losses = world_.losses();
  for (std::size_t i = losses.size() - decision.lost.size(); i < losses.size(); ++i) say(losses[i] + "; it is stopped");
  actions.stop = decision.lost;
  if (decision.round) publish(*decision.round);
  if (decision.waiting_to_join != published_pending_) {
    store_.set(rendezvous::kElasticPendingKey, std::to_string(decision.waiting_to_join));
    if (decision.waiting_to_join > 0) {
      say(fmt::format("{} new worker{} wait{} to join at the next commit", decision.waiting_to_join,
                      decision.waiting_to_join == 1 ? "" : "s", decision.waiting_to_join == 1 ? "s" : ""));
    }
    published_pending_ = decision.waiting_to_join;
  }
  actions.failure = decision.failure;
  return actions;
}

void ElasticDriver::discover(ElasticWorld::Clock::time_point now) {
  if (!options_.discovery_script || (next_discovery_ && now < *next_discovery_)) return;
  next_discovery_ = now + std::chrono::duration_cast<ElasticWorld::Clock::duration>(
                              std::chrono::duration<double>(options_.discovery_interval_s));
  try {
    world_.set_discovered_hosts(discover_hosts(*options_.discovery_script));
  } catch (const std::exception& e) {
    // A failing script keeps the hosts it reported last; the job is not at fault.
    spdlog::warn("elastic: {}", e.what());
  }
}

void ElasticDriver::read_requests() {
  for (int id = 0; id < workers_started_; ++id) {
    auto value = store_.value(rendezvous::elastic_join_key(id));
    if (!value) continue;
    std::string& seen = seen_requests_[id];
    if (*value == seen) continue;
    seen = *value;
    try {
      world_.worker_asked(id, std::stoi(*value));
    } catch (const std::exception&) {
      spdlog::warn("elastic: worker {} wrote a malformed request '{}'", id, *value);
    }
  }
}

void ElasticDriver::publish(const rendezvous::ElasticRound& round) {
  store_.set(rendezvous::elastic_round_key(round.number), rendezvous::encode_round(round));
  store_.set(rendezvous::kElasticRoundKey, std::to_string(round.number));
  if (round.closed_reason.empty())
    say(fmt::format("round {}: {} rank{} ({})", round.number, round.size(), round.size() == 1 ? "" : "s",
                    describe_members(round)));
}

}  // namespace dtrain::launch
