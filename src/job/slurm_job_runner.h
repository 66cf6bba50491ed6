// `dtrain job run --backend slurm`: a job spec submitted to a Slurm cluster and followed to
// its end. The hosts' /opt/ml live under a shared work directory (the channels are read from
// shared directories, as every node sees the same paths), the batch script is the one
// `dtrain job render --target slurm` prints, and the artifacts, metrics, logs and summary end
// up where a local run leaves them.
#pragma once

#include <optional>
#include <string>

#include "job/job_spec.h"

namespace dtrain::job {

struct SlurmRunOptions {
  std::string dtrain_exe;               // dtrain as the nodes run it (same path everywhere)
  std::optional<std::string> work_dir;  // shared; default output_path/<name>/slurm-work
  bool keep_work_dir = false;
  std::string partition;          // "" for the cluster's default
  std::string sbatch_args;        // passed to sbatch as they are
  std::string network_interface;  // for the ranks; "" lets dtrain choose
};

// Stages the hosts, submits, relays the job's output (host-prefixed, into logs/ and
// metrics.jsonl) while polling its state, and on the end packs the artifacts and writes
// summary.json: Completed, Failed (with the master's failure reason, or Slurm's state),
// Stopped (scancel; SIGINT or SIGTERM to this process cancels the job first) or
// MaxRuntimeExceeded (Slurm's TIMEOUT). Returns the job's exit code. Throws JobError for
// problems before submission (a Pipe channel, an engine Slurm cannot run, sbatch refusing).
int run_slurm_job(const JobSpec& spec, const SlurmRunOptions& options);

}  // namespace dtrain::job
