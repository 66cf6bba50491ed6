// dtrain::elastic::State and run() (include/dtrain/elastic.h): the worker's side of a reset.
#include <cstdlib>

#include "dtrain/dtrain.h"
#include "dtrain/elastic.h"
#include "runtime/elastic_membership.h"
#include "runtime/environment.h"
#include "runtime/logging.h"

namespace dtrain::elastic {
namespace {

// The store's coordinates and this worker's number, as the launcher gave them.
const runtime::RuntimeConfig& launcher_config() {
  static const runtime::RuntimeConfig config = runtime::read_config_from_environment();
  return config;
}

}  // namespace

bool enabled() {
  const char* worker = std::getenv("DTRAIN_ELASTIC_WORKER");
  return worker && *worker;
}

void State::commit() {
  save();
  ++commits_;
  check_host_updates();
}

void State::check_host_updates() {
  if (!enabled() || !is_initialized()) return;
  std::string waiting;
  if (rank() == 0) waiting = std::to_string(runtime::workers_waiting_to_join(launcher_config()));
  waiting = broadcast_object(waiting, 0, "dtrain.elastic.waiting_workers");
  if (waiting != "0") throw HostsUpdated();
}

void State::on_reset(std::function<void(const WorldChange&)> callback) { callbacks_.push_back(std::move(callback)); }

void State::notify_reset(const WorldChange& change) {
  for (const auto& callback : callbacks_) callback(change);
}

void run(State& state, const std::function<void()>& train) {
  bool reset = false;
  int world_size = 0;  // of the last world formed
  WorldChange change;
  while (true) {
    try {
      init();
      world_size = size();
      if (reset) {
        change.size = size();
        change.round = runtime::current_elastic_round();
        state.notify_reset(change);
      }
      state.sync();
      train();
      return;
    } catch (const WorkersLostError& e) {
      if (!enabled()) throw;
      change = WorldChange{};
      change.previous_size = world_size;
      change.restored = true;
      change.reason = e.what();
      shutdown();
      state.restore();
    } catch (const HostsUpdated& e) {
      change = WorldChange{};
      change.previous_size = world_size;
      change.reason = e.what();
      shutdown();
    }
    reset = true;
  }
}

}  // namespace dtrain::elastic
