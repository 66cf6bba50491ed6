#include "launch/elastic_world.h"

#include <sys/wait.h>

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/signal_channel.h"
#include "launch/worker_env.h"

namespace dtrain::launch {
namespace {

std::chrono::steady_clock::duration after_seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

ElasticWorld::ElasticWorld(ElasticSettings settings, std::vector<HostSlots> hosts, Clock::time_point now)
    : settings_(settings), started_(now) {
  for (auto& h : hosts) {
    Host& host = hosts_[h.name];
    host.slots = h.slots;
    host.initial = true;
  }
  forming_since_ = now;  // the first round forms from the start
}

void ElasticWorld::set_discovered_hosts(std::vector<HostSlots> hosts) {
  for (auto& [name, host] : hosts_) host.discovered = false;
  for (auto& h : hosts) {
    Host& host = hosts_[h.name];
    host.discovered = true;
    if (!host.initial) host.slots = h.slots;
  }
}

std::vector<std::string> ElasticWorld::hosts_to_fill(Clock::time_point now) const {
  std::vector<std::string> fill;
  if (finishing()) return fill;
  int room = settings_.max_np - static_cast<int>(live_workers().size());
  for (const auto& [name, host] : hosts_) {
    if (!host.initial && !host.discovered) continue;
    if (host.cool_until && now < *host.cool_until) continue;
    int used = 0;
    for (const auto& [id, w] : workers_) used += w.alive && w.host == name ? 1 : 0;
    for (int slot = used; slot < host.slots && room > 0; ++slot, --room) fill.push_back(name);
  }
  return fill;
}

int ElasticWorld::worker_started(const std::string& host, bool remote) {
  const int id = next_worker_++;
  workers_[id] = Worker{host, remote};
  return id;
}

ElasticWorld::Ending ElasticWorld::worker_ended(int worker, int wait_status, Clock::time_point now) {
  Worker& w = workers_.at(worker);
  w.alive = false;
  w.asking = false;
  if (w.killed_as_lost) return Ending::kLost;
  if (WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
    finishing_ = true;
    return Ending::kFinished;
  }
  // A remote worker's end comes through ssh (or the job's agent): 255 when the connection
  // broke, 128+N when the remote shell saw the worker killed by signal N.
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
  const int signal = WIFSIGNALED(wait_status)                    ? WTERMSIG(wait_status)
                     : w.remote && code > 128 && code < 128 + 65 ? code - 128
                                                                 : 0;
  if (signal != 0) {
    lose(worker, fmt::format("was killed by signal {} ({})", signal, signal_name(signal)), now);
    return Ending::kLost;
  }
  if (w.remote && code == 255) {
    lose(worker, "lost its ssh connection", now);
    return Ending::kLost;
  }
  return Ending::kFatal;
}

void ElasticWorld::worker_asked(int worker, int last_round) {
  auto it = workers_.find(worker);
  if (it == workers_.end() || !it->second.alive) return;
  // A stale request (from before the worker's newest round) asks for nothing.
  if (last_round < it->second.round) return;
  it->second.asking = true;
}

void ElasticWorld::lose(int worker, const std::string& why, Clock::time_point now) {
  Worker& w = workers_.at(worker);
  w.alive = false;
  w.asking = false;
  Host& host = hosts_[w.host];
  host.cool_until = now + after_seconds(settings_.host_cooldown_s);
  losses_.push_back(fmt::format("host {}: worker {} {}", w.host, worker, why));
}

std::vector<int> ElasticWorld::live_workers() const {
  std::vector<int> alive;
  for (const auto& [id, w] : workers_) {
    if (w.alive) alive.push_back(id);
  }
  return alive;
}

// A member wants a new world (a peer failed, or workers wait to join), or a member is gone.
bool ElasticWorld::round_wanted() const {
  if (round_ == 0) return true;
  for (int id : members_) {
    const Worker& w = workers_.at(id);
    if (w.asking || !w.alive) return true;
  }
  return false;
}

// A member of the current world that died on its own (not one stopped here as stalled).
bool ElasticWorld::a_member_died() const {
  for (int id : members_) {
    const Worker& w = workers_.at(id);
    if (!w.alive && !w.killed_as_lost) return true;
  }
  return false;
}

// How long the members have to ask for the round being formed. After a member's death the
// survivors learn of it when its sockets close, as a rule at once; but a Gloo send already
// queued towards it fails only when the sender's DTRAIN_TIMEOUT_S runs out (docs/elastic.md).
// Such a survivor asks up to two timeouts after the death -- one to reach a collective, one
// for that collective to time out -- and must not be taken for stalled meanwhile.
double ElasticWorld::arrival_window_s() const {
  if (round_ == 0) return settings_.start_timeout_s;
  return a_member_died() ? 2 * settings_.arrival_timeout_s : settings_.arrival_timeout_s;
}

rendezvous::ElasticRound ElasticWorld::next_round(const std::vector<int>& asking) const {
  rendezvous::ElasticRound round;
  round.number = round_ + 1;
  auto add = [&](int id) {
    if (round.size() < settings_.max_np) round.members.push_back({id, workers_.at(id).host});
  };
  for (int id : members_) {
    if (std::find(asking.begin(), asking.end(), id) != asking.end()) add(id);
  }
  for (int id : asking) {
    if (std::find(members_.begin(), members_.end(), id) == members_.end()) add(id);
  }
  return round;
}

std::string ElasticWorld::below_minimum(int alive) const {
  std::string lost = losses_.empty() ? "none lost" : "lost: " + fmt::format("{}", fmt::join(losses_, "; "));
  return fmt::format("elastic: {} worker{} alive, below --min-np {} for more than {} s ({})", alive,
                     alive == 1 ? "" : "s", settings_.min_np, format_env_number(settings_.elastic_timeout_s), lost);
}

ElasticDecision ElasticWorld::decide(Clock::time_point now) {
  ElasticDecision decision;
  if (failed_) return decision;
  std::vector<int> asking;
  for (int id : live_workers()) {
    if (workers_.at(id).asking) asking.push_back(id);
  }

  if (finishing_) {
    // Nothing more will be formed; whoever still waits for a world must not wait forever.
    if (!asking.empty() && !closed_published_) {
      rendezvous::ElasticRound closed;
      closed.number = round_ + 1;
      closed.closed_reason = "the job is finishing: a worker completed training, so no new world is formed";
      decision.round = closed;
      closed_published_ = true;
    }
    return decision;
  }

  if (!round_wanted()) {
    forming_since_.reset();
    for (int id : asking) decision.waiting_to_join += std::find(members_.begin(), members_.end(), id) == members_.end();
    return decision;
  }
  if (!forming_since_) forming_since_ = now;

  // The members must ask (at the start: every worker started), or be given up on once the
  // arrival window has passed. Workers still starting up join a later round.
  std::vector<int> required = round_ == 0 ? live_workers() : members_;
  std::erase_if(required, [&](int id) { return !workers_.at(id).alive; });
  const bool all_asked = std::all_of(required.begin(), required.end(), [&](int id) { return workers_.at(id).asking; });
  const double window = arrival_window_s();
  if (!all_asked) {
    if (window <= 0 || now < *forming_since_ + after_seconds(window)) return decision;
    for (int id : required) {
      if (workers_.at(id).asking) continue;
      workers_.at(id).killed_as_lost = true;
      lose(id,
           fmt::format("did not reach round {} within {} s (stalled, or its host unreachable)", round_ + 1,
                       format_env_number(window)),
           now);
      decision.lost.push_back(id);
    }
  }

  if (static_cast<int>(asking.size()) < settings_.min_np) {
    if (!below_min_since_) below_min_since_ = now;
    if (now >= *below_min_since_ + after_seconds(settings_.elastic_timeout_s)) {
      decision.failure = below_minimum(static_cast<int>(asking.size()));
      failed_ = true;
    }
    return decision;
  }
  below_min_since_.reset();
  if (round_ >= 1 && round_ - 1 >= settings_.reset_limit) {
    decision.failure = fmt::format("elastic: the world was re-formed {} times, the --reset-limit; last losses: {}",
                                   round_ - 1, losses_.empty() ? "none" : losses_.back());
    failed_ = true;
    return decision;
  }

  rendezvous::ElasticRound round = next_round(asking);
  round_ = round.number;
  members_.clear();
  for (const auto& m : round.members) {
    members_.push_back(m.worker);
    Worker& w = workers_.at(m.worker);
    w.asking = false;
    w.round = round_;
  }
  forming_since_.reset();
  decision.round = std::move(round);
  return decision;
}

}  // namespace dtrain::launch
