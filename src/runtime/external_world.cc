#include "runtime/external_world.h"

#include <cmath>

#include "runtime/served_store.h"

namespace dtrain {

int serve_rendezvous(const std::string& token, int size) {
  if (token.empty()) throw Error("dtrain::serve_rendezvous: the token is empty");
  if (size < 1) throw Error("dtrain::serve_rendezvous: size " + std::to_string(size) + " is not a world size");
  return runtime::serve_store(token, size, 0);
}

namespace runtime {

void adopt_external_world(RuntimeConfig& config, const ExternalWorld& world, bool stall_shutdown_from_environment) {
  const auto refuse = [](const std::string& what) { throw Error("dtrain::init(ExternalWorld): " + what); };
  if (world.size < 1) refuse("size " + std::to_string(world.size) + " is not a world size");
  if (world.rank < 0 || world.rank >= world.size) {
    refuse("rank " + std::to_string(world.rank) + " is not in [0, " + std::to_string(world.size) + ")");
  }
  if (world.size > 1 &&
      (world.rendezvous_host.empty() || world.rendezvous_port <= 0 || world.rendezvous_port > 65535)) {
    refuse("the rendezvous store '" + world.rendezvous_host + ":" + std::to_string(world.rendezvous_port) +
           "' is not a host and port");
  }
  if (world.size > 1 && world.token.empty()) refuse("the token is empty");
  if (!(world.timeout_s > 0) || !std::isfinite(world.timeout_s)) {
    refuse("timeout " + std::to_string(world.timeout_s) + " s is not a positive duration");
  }
  config.rank = world.rank;
  config.size = world.size;
  // The host layout found at connection replaces these (transport_factory.cc).
  config.local_rank = config.cross_rank = 0;
  config.local_size = config.cross_size = 1;
  config.launched_by_mpirun = false;
  config.launched_by_slurm = false;
  config.rendezvous_in_step = false;
  config.job_token_derived = false;
  config.elastic_worker = -1;
  config.rendezvous_addr = world.size > 1 ? world.rendezvous_host : "";
  config.rendezvous_port = world.size > 1 ? world.rendezvous_port : 0;
  config.job_token = world.token;
  config.job_id = world.job_id;
  config.timeout = std::chrono::milliseconds(static_cast<long long>(world.timeout_s * 1000));
  if (!stall_shutdown_from_environment) config.stall_shutdown_s = world.timeout_s;
}

}  // namespace runtime
}  // namespace dtrain
