#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "launch/job_supervisor.h"
#include "launch/ssh_command.h"

namespace dtrain::launch {

// Everything `dtrain run` was asked to do, as parsed from the command line.
struct LaunchOptions {
  std::optional<int> np;                 // -np; default: total slots of -H/--hostfile, else 1
  std::optional<std::string> host_list;  // -H host1:2,host2:4
  std::optional<std::string> hostfile;   // --hostfile FILE
  std::optional<std::string> network_interface;
  double start_timeout_s = 30;                  // 0 disables the rendezvous deadline
  std::optional<std::string> output_dir;        // --output-filename
  std::optional<std::string> rank_status_file;  // --rank-status-file (launch/rank_status_file.h); not with mpi/srun
  std::optional<std::string> timeline_filename;
  bool timeline_mark_cycles = false;
  bool autotune = false;                    // --autotune
  std::optional<std::string> autotune_log;  // --autotune-log-file
  std::optional<double> fusion_threshold_mb;
  std::optional<double> cycle_time_ms;
  std::optional<double> stall_warning_s;
  std::optional<double> stall_shutdown_s;
  bool verbose = false;
  SshOptions ssh;
  double kill_grace_s = 5;
  std::vector<std::string> command;
  bool use_mpi = false;    // --mpi: start the job with mpirun (Open MPI) instead
  std::string mpi_args;    // --mpi-args: passed to mpirun as they are
  bool use_slurm = false;  // --slurm: inside an allocation, start the ranks as one srun step
  std::string slurm_args;  // --slurm-args: passed to srun as they are

  // --ps: parameter-server training. One `dtrain ps-server` per host next to the
  // ranks (the workers); a worker other than rank 0 that fails is reported and the
  // job goes on without it; a server that fails ends the job.
  struct ParameterServers {
    bool enabled = false;
    std::string mode = "async";    // --ps-mode async|sync
    int staleness = -1;            // --ps-staleness S (async; -1: unbounded)
    double worker_timeout_s = 15;  // --ps-worker-timeout S
  } ps;

  // --min-np/--max-np: an elastic job (docs/elastic.md). The job goes on while at least
  // min_np workers live; hosts of lost workers are set aside for host_cooldown_s; the
  // discovery script's hosts are added up to max_np; ranks are numbered again at each change.
  struct Elastic {
    std::optional<int> min_np;                    // --min-np
    std::optional<int> max_np;                    // --max-np (default: -np, else all slots)
    std::optional<std::string> discovery_script;  // --host-discovery-script
    double timeout_s = 600;                       // --elastic-timeout: below min_np this long fails
    double host_cooldown_s = 300;                 // --host-cooldown
    int reset_limit = 50;                         // --reset-limit
    bool enabled() const { return min_np || max_np || discovery_script; }
  } elastic;

  // For programs that call launch_job() themselves (the job entry point):
  // prefix output lines with host and rank ("[host:rank]<stdout>:"), and
  // receive the first failure instead of the final "dtrain run: ..." line.
  bool tag_output_with_host = false;
  std::function<void(const WorkerFailure&)> on_failure;
  // With use_mpi: run mpirun as a supervised child and return its outcome (output relayed
  // with the prefixes above, the first failed rank named from mpirun's report) instead of
  // replacing this process with it. ssh.agent then starts Open MPI's daemons (plm_rsh_agent).
  bool wait_for_mpirun = false;
};

}  // namespace dtrain::launch
