#pragma once

#include "ps/parameter_store.h"

namespace dtrain::ps {

struct ServerProcessOptions {
  ParameterStoreOptions store;
  int ready_rank = -1;  // what the server reports ready as to the launcher (after the workers' ranks)
};

// `dtrain ps-server`: listens on a free port, publishes "<host>:<port>" under
// "<job id>/ps/server/<index>" in the launcher's rendezvous store (DTRAIN_RENDEZVOUS_*,
// DTRAIN_JOB_TOKEN, DTRAIN_JOB_ID, DTRAIN_HOSTNAME as `dtrain run` sets them), reports
// ready, and serves until SIGTERM, SIGINT or SIGHUP. Returns the exit code.
int run_server_process(const ServerProcessOptions& options);

}  // namespace dtrain::ps
