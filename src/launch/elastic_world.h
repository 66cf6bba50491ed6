// The elastic driver's bookkeeping, without processes or sockets: which hosts may run
// workers, which workers live, who waits for a new round, and when to publish one, give up
// on a worker, or fail the job. `dtrain run --min-np` feeds it what happens (workers started,
// ended, asking to join; hosts discovered) and carries out its decisions (elastic_driver.h).
//
// Rules, in the order they apply:
// - A worker that exits 0 has finished training: the job is finishing, no round is formed
//   after that, and workers still asking for one are told the rounds are closed.
// - A worker killed by a signal this driver did not send (for a remote worker: ssh's exit
//   128+N), or whose ssh lost its host (exit 255), is lost: its host is set aside for the
//   cool-down.
// - Any other non-zero exit is the program's own failure: the job ends as without elasticity.
// - A round is formed when a member of the current round (or, at the start, any worker) asks
//   for a newer one. It waits for every live worker to ask, at most the arrival timeout (the
//   workers' DTRAIN_TIMEOUT_S; at the start the start timeout); a worker that has not asked by
//   then is lost (stalled or unreachable) and is killed.
// - The round's members: the previous round's members that asked, in their old rank order,
//   then new workers by number, at most max_np. Fewer than min_np: no round; the job waits
//   for workers (hosts discovered, cool-downs over) and fails after the elastic timeout.
// - Workers started while a world runs wait; `waiting_to_join` tells rank 0, whose next
//   commit makes the members ask for a new round.
// - More resets (rounds after the first) than the reset limit fail the job.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "launch/host_spec.h"
#include "rendezvous/elastic_round.h"

namespace dtrain::launch {

struct ElasticSettings {
  int min_np = 1;
  int max_np = 1;
  double start_timeout_s = 30;     // for the first round
  double arrival_timeout_s = 300;  // for later rounds (the workers' DTRAIN_TIMEOUT_S)
  double elastic_timeout_s = 600;  // below min_np this long: the job fails
  double host_cooldown_s = 300;    // a lost worker's host runs no new worker this long
  int reset_limit = 50;
};

// What the driver must do after a decide().
struct ElasticDecision {
  std::optional<rendezvous::ElasticRound> round;  // publish (a closed one included)
  std::vector<int> lost;                          // kill these workers: they are lost
  std::optional<std::string> failure;             // end the job with this line
  int waiting_to_join = 0;                        // for rank 0's next commit
};

class ElasticWorld {
 public:
  using Clock = std::chrono::steady_clock;

  ElasticWorld(ElasticSettings settings, std::vector<HostSlots> hosts, Clock::time_point now);

  // The discovery script's latest list; replaces the previous one (the initial hosts stay).
  void set_discovered_hosts(std::vector<HostSlots> hosts);
  // One host name per worker to start now: free slots of hosts not cooling down, up to
  // max_np live workers, none once the job is finishing.
  std::vector<std::string> hosts_to_fill(Clock::time_point now) const;
  // A worker was started on `host`; returns its number.
  int worker_started(const std::string& host, bool remote);

  enum class Ending { kLost, kFinished, kFatal };
  // A worker's process ended with `wait_status`.
  Ending worker_ended(int worker, int wait_status, Clock::time_point now);
  // A worker asked for a round newer than `last_round`.
  void worker_asked(int worker, int last_round);

  ElasticDecision decide(Clock::time_point now);

  // True once the job can only end: a worker finished, or the job failed.
  bool finishing() const { return finishing_ || failed_; }
  const std::vector<std::string>& losses() const { return losses_; }

 private:
  struct Worker {
    std::string host;
    bool remote = false;
    bool alive = true;
    bool asking = false;  // asked for a newer round and has not been given one
    int round = 0;        // the last round it was a member of
    bool killed_as_lost = false;
  };
  struct Host {
    int slots = 0;
    bool initial = false;
    bool discovered = false;
    std::optional<Clock::time_point> cool_until;
  };

  void lose(int worker, const std::string& why, Clock::time_point now);
  std::vector<int> live_workers() const;
  bool round_wanted() const;
  bool a_member_died() const;
  double arrival_window_s() const;
  rendezvous::ElasticRound next_round(const std::vector<int>& asking) const;
  std::string below_minimum(int alive) const;

  ElasticSettings settings_;
  std::map<std::string, Host> hosts_;
  std::map<int, Worker> workers_;
  int next_worker_ = 0;
  int round_ = 0;             // the newest round published
  std::vector<int> members_;  // its members in rank order
  std::optional<Clock::time_point> forming_since_;
  std::optional<Clock::time_point> below_min_since_;
  Clock::time_point started_;
  bool finishing_ = false;
  bool failed_ = false;
  bool closed_published_ = false;
  std::vector<std::string> losses_;  // "host h: worker 2 was killed by signal 9 (SIGKILL)"
};

}  // namespace dtrain::launch
