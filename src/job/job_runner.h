#pragma once

#include <optional>
#include <string>

#include "job/job_spec.h"
#include "job/local_cluster.h"

namespace dtrain::job {

struct RunOptions {
  HostKind hosts = HostKind::kProcess;
  std::optional<std::string> work_dir;  // default: $TMPDIR/dtrain-job-<name>-<pid>
  bool keep_work_dir = false;
  double kill_grace_s = 10;  // SIGTERM -> SIGKILL when stopping hosts
  std::string dtrain_exe;    // the dtrain binary every host runs
};

// `dtrain job run`: plays the platform for a job on this machine. Creates
// the hosts (algo-1..N), writes each host's /opt/ml, stages the channels,
// starts `dtrain entrypoint` on every host, relays and records their output
// (logs, metrics), enforces max_run_seconds, then packs the artifacts
// (model.tar.gz, output.tar.gz), syncs checkpoints and writes the summary
// under output_path/<name>/, and removes the hosts. Returns the job's exit
// code (the algorithm's; 0 on success). Throws JobError for problems before
// any host started, such as a channel source missing on this machine.
int run_job(const JobSpec& spec, const RunOptions& options);

}  // namespace dtrain::job
