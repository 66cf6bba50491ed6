// `dtrain run --mpi`: the mpirun command line that starts the same job under Open MPI. The
// workers then find their world in OMPI_COMM_WORLD_* and negotiate and move data over MPI.
// Ranks are mapped by slot (--map-by slot), so rank r runs on the host assign_ranks() gives it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "launch/host_spec.h"
#include "launch/worker_env.h"

namespace dtrain::launch {

struct MpirunSettings {
  int np = 1;
  std::vector<HostSlots> hosts;
  std::optional<std::string> network_interface;
  EnvVars knobs;                             // DTRAIN_* settings for every rank (set and forwarded)
  std::vector<std::string> forwarded_names;  // other variables to forward with -x
  std::vector<std::string> extra_args;       // --mpi-args, split on whitespace
  // How mpirun starts its daemons on other hosts instead of ssh (Open MPI's plm_rsh_agent; it
  // runs `<agent...> <host> <orted command...>`). Open MPI splits it on spaces, so no word may
  // hold one.
  std::vector<std::string> agent;
  bool running_as_root = false;
  bool oversubscribed = false;  // more ranks than cores on this machine
  std::vector<std::string> command;
};

// Throws LaunchError (usage) for an agent word Open MPI could not pass on intact.
std::vector<std::string> mpirun_argv(const MpirunSettings& settings);

// The knobs among a rank's DTRAIN_* variables: what every rank shares (not its rank, size,
// host or rendezvous, which mpirun and MPI provide).
EnvVars shared_knobs(const EnvVars& rank_env);

// Splits --mpi-args on whitespace.
std::vector<std::string> split_arguments(const std::string& text);

}  // namespace dtrain::launch
