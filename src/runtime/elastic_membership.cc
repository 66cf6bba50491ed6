#include "runtime/elastic_membership.h"

#include <chrono>
#include <optional>
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
    throw Error("dtrain: the rendezvous store's '" + std::string(rendezvous::kElasticRoundKey) +
                "' is not a number: '" + text + "'");
  }
}

// A store out of reach while this worker joins a round means this worker is cut off from the
// launcher's host (or the other way round). That is the launcher's to judge: it gives up on a
// member that does not ask for the round within DTRAIN_TIMEOUT_S and stops it, and it must not
// take this worker's exit for the program's own failure first. So requests are tried again
// until the store has been out of reach for twice that long; then the error stands.
class PatientStore {
 public:
  explicit PatientStore(const RuntimeConfig& config) : store_(store_of(config)), patience_(2 * config.timeout) {}

  template <typename Request>
  auto operator()(Request&& request) {
    while (true) {
      try {
        auto result = request(store_);
        unreachable_since_.reset();
        return result;
      } catch (const rendezvous::StoreUnreachable& e) {
        const auto now = std::chrono::steady_clock::now();
        if (!unreachable_since_) {
          unreachable_since_ = now;
          log().warn("elastic: {}; trying again for up to {} s (the launcher decides whether this worker is lost)",
                     e.what(), std::chrono::duration_cast<std::chrono::seconds>(patience_).count());
        }
        if (now - *unreachable_since_ >= patience_) throw;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    }
  }

 private:
  rendezvous::RendezvousClient store_;
  std::chrono::milliseconds patience_;
  std::optional<std::chrono::steady_clock::time_point> unreachable_since_;
};

}  // namespace

rendezvous::ElasticRound join_next_round(const RuntimeConfig& config, int last_round) {
  PatientStore store(config);
  store([&](rendezvous::RendezvousClient& s) {
    s.set(rendezvous::elastic_join_key(config.elastic_worker), std::to_string(last_round));
    return true;
  });
  log().debug("elastic: worker {} asks for a round after {}", config.elastic_worker, last_round);
  auto pause = std::chrono::milliseconds(5);
  int seen = last_round;
  while (true) {
    if (auto newest = store([](rendezvous::RendezvousClient& s) { return s.try_get(rendezvous::kElasticRoundKey); })) {
      const int number = as_round_number(*newest);
      if (number > seen) {
        rendezvous::ElasticRound round =
            rendezvous::decode_round(number, store([&](rendezvous::RendezvousClient& s) {
                                       return s.wait_get(rendezvous::elastic_round_key(number), config.timeout);
                                     }));
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
  std::optional<std::string> value;
  try {
    value = store_of(config).try_get(rendezvous::kElasticPendingKey);
  } catch (const rendezvous::StoreUnreachable& e) {
    // Cut off from the launcher's host: no one is known to wait. If the world is broken too,
    // its next collective says so, and joining the next round waits for the store (above).
    log().warn("elastic: {}; no new worker is taken in at this commit", e.what());
    return 0;
  }
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
