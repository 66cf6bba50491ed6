#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/local_spawner.h"
#include "launch/rank_assignment.h"

namespace dtrain::launch {

class SignalChannel;

// One rank to start: where it runs and the process that runs it (the
// command itself for a local rank, ssh for a remote one).
struct WorkerLaunch {
  RankPlacement placement;
  SpawnRequest request;
  // A service (a parameter server) runs for the workers: it is stopped with SIGTERM
  // once every worker has exited, and its exit before then fails the job. Its
  // placement.rank is the rank it reports ready as; `name` is how messages call it (an elastic
  // job's workers are named too: "worker 3", their rank changes with the world).
  bool service = false;
  std::string name;
  // A rank started on this machine (not over ssh, not a tool such as mpirun or srun): SIGUSR1
  // to the launcher is passed on to it, and it answers with its flight record.
  bool rank_on_this_host = false;
};

// The first failure of a job: who, why, and how the process ended (absent
// when it never ran, or the job failed for another reason: a deadline).
struct WorkerFailure {
  RankPlacement placement;
  std::string description;
  std::optional<int> wait_status;
};

// What an elastic job (`dtrain run --min-np`) adds to supervision: a worker's end need not end
// the job, and workers are started and stopped while it runs. launch/elastic_driver.h has the one.
class ElasticControl {
 public:
  struct Actions {
    std::vector<WorkerLaunch> start;     // placement.rank: the worker's number
    std::vector<int> stop;               // workers to kill (SIGKILL to their process groups)
    std::optional<std::string> failure;  // end the job with this line
  };
  virtual ~ElasticControl() = default;
  // A worker's process ended; true when the job goes on without it.
  virtual bool worker_ended(const RankPlacement& worker, int wait_status) = 0;
  // Asked at every wakeup of the supervisor (at least every 100 ms).
  virtual Actions step() = 0;
  // True once no worker will be started any more: the job ends when the last one has.
  virtual bool done() const = 0;
};

struct SupervisorOptions {
  // A worker still running this long after launch without having posted
  // ready fails the job. 0 disables the check.
  double start_timeout_s = 30;
  // Time between SIGTERM (or the forwarded signal) and SIGKILL.
  double kill_grace_s = 5;
  // --output-filename: raw copies of each rank's output under this directory.
  std::optional<std::string> output_dir;
  // Whether a rank has posted ready to the rendezvous store.
  std::function<bool(int rank)> is_ready = [](int) { return false; };

  // Extension points for programs that run whole jobs (the job runner, the
  // container entry point); `dtrain run` leaves them empty.
  // The prefix of relayed lines; default relay_prefix(rank, stream).
  std::function<std::string(const RankPlacement&, std::string_view stream)> prefix;
  // Receives every relayed line (prefixed, newline-terminated) instead of
  // this process's stdout/stderr.
  std::function<void(const RankPlacement&, bool is_stderr, std::string_view line)> line_sink;
  // Receives the first failure instead of the final "dtrain run: ..." line.
  std::function<void(const WorkerFailure&)> on_failure;
  // A worker (not a service) started as process `pid`; and once it has posted ready.
  std::function<void(const RankPlacement&, pid_t pid)> on_start;
  std::function<void(const RankPlacement&)> on_ready;
  // Every worker's wait status, as it is reaped.
  std::function<void(const RankPlacement&, int wait_status)> on_exit;
  // Stop every worker (as after a failure) once the job has run this long; 0: no limit.
  double time_limit_s = 0;
  // Parameter-server training: a worker other than rank 0 that fails is reported
  // on stderr and the others go on; the job fails only for rank 0 or a service.
  bool tolerate_worker_failures = false;
  // Asked when a worker fails (not a service, not when the job is stopping already): true lets
  // the others go on without it, and the caller reports it (the job runner's elastic jobs: a
  // worker host lost). Unset: every failure ends the job, as above.
  std::function<bool(const RankPlacement&, int wait_status)> tolerate_failure;
  // An elastic job's membership (start_timeout_s does not apply: the control gives up on
  // workers that do not arrive).
  ElasticControl* elastic = nullptr;
};

// Runs the workers of one job to the end. Relays their output line by line
// with a rank prefix, and when one fails (non-zero exit, killed by a signal,
// cannot exec, late to rendezvous) stops the others: the signal to their
// process groups, SIGKILL after the grace period. SIGINT/SIGTERM/SIGHUP to
// the launcher are forwarded the same way. Every child is reaped.
class JobSupervisor {
 public:
  JobSupervisor(SupervisorOptions options, SignalChannel& signals);

  // Returns the launcher's exit code: 0 when every worker exited 0, 1 after
  // a worker failure (one line naming the first failing rank is printed to
  // stderr), 128+signal when the launcher was interrupted.
  int run(std::vector<WorkerLaunch> workers);

 private:
  SupervisorOptions options_;
  SignalChannel& signals_;
};

}  // namespace dtrain::launch
