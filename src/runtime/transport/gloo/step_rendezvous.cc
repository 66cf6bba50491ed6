#include "runtime/transport/gloo/step_rendezvous.h"

#include "dtrain/error.h"
#include "rendezvous/rendezvous_client.h"
#include "runtime/logging.h"
#include "runtime/served_store.h"

namespace dtrain::runtime {

void meet_at_step_rendezvous(const RuntimeConfig& config) {
  if (config.job_token_derived && config.rank == 0) {
    log().warn(
        "DTRAIN_JOB_TOKEN is not set: the step's rendezvous on {}:{} accepts any process that knows the "
        "job and step ids; export a secret DTRAIN_JOB_TOKEN before srun to keep strangers out (docs/slurm.md)",
        config.rendezvous_addr, config.rendezvous_port);
  }
  if (config.rendezvous_in_step && config.rank == 0) {
    try {
      serve_store(config.job_token, config.size, config.rendezvous_port);
    } catch (const Error& e) {
      throw Error(std::string(e.what()) +
                  " (rank 0 serves the Slurm step's rendezvous there; set DTRAIN_RENDEZVOUS_PORT "
                  "to a free port for every task)");
    }
    log().info("serving the Slurm step's rendezvous on {}:{}", config.rendezvous_addr, config.rendezvous_port);
    return;
  }
  rendezvous::RendezvousClient(config.rendezvous_addr, config.rendezvous_port, config.job_token)
      .wait_until_reachable(config.timeout);
}

}  // namespace dtrain::runtime
