#include "runtime/elastic_membership.h"

#include <chrono>
#include <string>
#include <thread>

#include "dtrain/dtrain.h"
#include "rendezvous/rendezvous_client.h"
#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

rendezvous::RendezvousClient store_of(const RuntimeConfig& config) {
  return rendezvous::RendezvousClient(config.rendezvous_addr, config.rendezvous_port, config.job_token);
}

int as_round_number(const std::string& text) {
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    throw Error("dtrain: the rendezvous store's '" + std::string(rendezvous::kElasticRoundKey) + "' is not a number: '" +
                text + "'");
  }
}

}  // namespace

rendezvous::ElasticRound join_next_round(const RuntimeConfig& config, int last_round) {
  rendezvous::RendezvousClient store = store_of(config);
  store.set(rendezvous::elastic_join_key(config.elastic_worker), std::to_string(last_round));
  log().debug("elastic: worker {} asks for a round after {}", config.elastic_worker, last_round);
  auto pause = std::chrono::milliseconds(5);
  int seen = last_round;
  while (true) {
    if (auto newest = store.try_get(rendezvous::kElasticRoundKey)) {
      const int number = as_round_number(*newest);
      if (number > seen) {
        rendezvous::ElasticRound round =
            rendezvous::decode_round(number, store.wait_get(rendezvous::elastic_round_key(number), config.timeout));
        if (!round.closed_reason.empty()) throw Error("dtrain: elastic: " + round.closed_reason);
        if (round.rank_of(config.elastic_worker)) return round;
        // A round formed without this worker: it started while a world ran (it joins a later
        // round, once the members commit), or the driver gave up on it (and stops it).
        seen = number;
      }
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
}

int workers_waiting_to_join(const RuntimeConfig& config) {
  auto value = store_of(config).try_get(rendezvous::kElasticPendingKey);
  if (!value) return 0;
  try {
    return std::stoi(*value);
  } catch (const std::exception&) {
    return 0;
  }
}

void adopt_round(RuntimeConfig& config, const rendezvous::ElasticRound& round) {
  config.rank = *round.rank_of(config.elastic_worker);
  config.size = round.size();
  // A world of one meets no one, so nothing else would set these.
  config.local_rank = config.cross_rank = 0;
  config.local_size = config.cross_size = 1;
  config.elastic_round = round.number;
}

}  // namespace dtrain::runtime
