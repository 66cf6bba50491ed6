#include "ps/ps_server_process.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "ps/ps_error.h"
#include "ps/ps_service.h"
#include "rendezvous/rendezvous_client.h"
#include "settings/env_setting.h"

namespace dtrain::ps {
namespace {

std::string required(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value)
    throw PsError(fmt::format("{} is not set; parameter servers are started by `dtrain run --ps`", name));
  return value;
}

}  // namespace

int run_server_process(const ServerProcessOptions& options) {
  // Before any gRPC thread exists, so every thread inherits the mask and sigwait sees them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  const std::string token = required("DTRAIN_JOB_TOKEN");
  const std::string rendezvous = required("DTRAIN_RENDEZVOUS_ADDR");
  required("DTRAIN_RENDEZVOUS_PORT");
  int rendezvous_port = 0;
  try {
    rendezvous_port = *settings::env_port("DTRAIN_RENDEZVOUS_PORT");
  } catch (const settings::SettingError& e) {
    throw PsError(e.what());
  }
  const char* job = std::getenv("DTRAIN_JOB_ID");
  // Reachable where the workers' collectives would be: loopback for a job on this
  // machine, else the host name the launcher placed the server on.
  std::string host;
  if (rendezvous.rfind("127.", 0) == 0 || rendezvous == "localhost") {
    host = "127.0.0.1";
  } else if (const char* name = std::getenv("DTRAIN_HOSTNAME"); name && *name) {
    host = name;
  } else {
    char buffer[256] = {};
    gethostname(buffer, sizeof(buffer) - 1);
    host = buffer;
  }

  ParameterServer server(options.store, token, "0.0.0.0:0");
  const std::string address = fmt::format("{}:{}", host, server.port());
  rendezvous::RendezvousClient store(rendezvous, rendezvous_port, token);
  store.set(fmt::format("{}/ps/server/{}", job && *job ? job : "job", options.store.server), address);
  if (options.ready_rank >= 0) store.report_ready(options.ready_rank);
  const std::string staleness =
      options.store.staleness < 0 ? "unbounded" : std::to_string(options.store.staleness) + " steps";
  std::printf("dtrain ps-server %d: serving on %s (%s updates, staleness %s)\n", options.store.server, address.c_str(),
              options.store.mode == UpdateMode::kSync ? "sync" : "async", staleness.c_str());
  std::fflush(stdout);

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  server.shutdown();
  return 0;
}

}  // namespace dtrain::ps
