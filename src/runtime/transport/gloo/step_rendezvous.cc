#include "runtime/transport/gloo/step_rendezvous.h"

#include <memory>
#include <mutex>

#include "dtrain/error.h"
#include "rendezvous/rendezvous_client.h"
#include "rendezvous/rendezvous_server.h"
#include "runtime/logging.h"

namespace dtrain::runtime {
namespace {

// Lives until the process exits: ranks that are slower to connect may still read keys after
// rank 0's own init() returned, and a later init() of the same step meets here again.
std::mutex server_mutex;
std::unique_ptr<rendezvous::RendezvousServer> server;

}  // namespace

void meet_at_step_rendezvous(const RuntimeConfig& config) {
  if (config.job_token_derived && config.rank == 0) {
    log().warn("DTRAIN_JOB_TOKEN is not set: the step's rendezvous on {}:{} accepts any process that knows the "
               "job and step ids; export a secret DTRAIN_JOB_TOKEN before srun to keep strangers out (docs/slurm.md)",
               config.rendezvous_addr, config.rendezvous_port);
  }
  if (config.rendezvous_in_step && config.rank == 0) {
    std::lock_guard lock(server_mutex);
    if (server) return;
    auto starting = std::make_unique<rendezvous::RendezvousServer>(config.job_token, config.size);
    try {
      starting->start("0.0.0.0", config.rendezvous_port);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " (rank 0 serves the Slurm step's rendezvous there; set DTRAIN_RENDEZVOUS_PORT "
                  "to a free port for every task)");
    }
    server = std::move(starting);
    log().info("serving the Slurm step's rendezvous on {}:{}", config.rendezvous_addr, config.rendezvous_port);
    return;
  }
  rendezvous::RendezvousClient(config.rendezvous_addr, config.rendezvous_port, config.job_token)
      .wait_until_reachable(config.timeout);
}

}  // namespace dtrain::runtime
