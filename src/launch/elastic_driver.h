// `dtrain run --min-np/--max-np`: the supervisor's ElasticControl. It carries out what
// ElasticWorld decides: starts workers on free slots (the hosts of -H/--hostfile and those the
// discovery script reports), reads the workers' requests for a new round from the rendezvous
// store and publishes each round there (rendezvous/elastic_round.h), kills workers given up on,
// and says on stderr what changed ("dtrain run: elastic: ...").
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "launch/elastic_world.h"
#include "launch/job_supervisor.h"

namespace dtrain::rendezvous {
class RendezvousServer;
}

namespace dtrain::launch {

struct ElasticDriverOptions {
  ElasticSettings settings;
  std::optional<std::string> discovery_script;  // prints "host[:slots]" lines
  double discovery_interval_s = 1;
  // The process for worker `worker` on `host` (its placement.rank is set to the number).
  std::function<WorkerLaunch(int worker, const std::string& host)> make_launch;
  std::function<bool(const std::string& host)> is_remote;
};

class ElasticDriver final : public ElasticControl {
 public:
  ElasticDriver(ElasticDriverOptions options, std::vector<HostSlots> hosts, rendezvous::RendezvousServer& store);

  bool worker_ended(const RankPlacement& worker, int wait_status) override;
  Actions step() override;
  bool done() const override { return world_.finishing(); }

 private:
  void discover(ElasticWorld::Clock::time_point now);
  void read_requests();
  void publish(const rendezvous::ElasticRound& round);

  ElasticDriverOptions options_;
  ElasticWorld world_;
  rendezvous::RendezvousServer& store_;
  std::map<int, std::string> seen_requests_;  // worker -> its last request's value
  std::optional<ElasticWorld::Clock::time_point> next_discovery_;
  int published_pending_ = -1;
  int workers_started_ = 0;
};

}  // namespace dtrain::launch
