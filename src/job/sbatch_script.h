// A job spec as a Slurm batch script: one entry point per node (algo-N is the allocation's
// N-th node, its /opt/ml a directory under a shared hosts directory), the first node the
// master that starts instance_count x processes_per_host ranks as one srun step. What
// `dtrain job render --target slurm` prints and `dtrain job run --backend slurm` submits.
#pragma once

#include <string>
#include <vector>

#include "job/job_spec.h"

namespace dtrain::job {

struct SbatchOptions {
  std::string dtrain_exe = "dtrain";  // dtrain as the nodes find it (same path everywhere)
  std::string hosts_dir;              // shared: <hosts_dir>/algo-N is host N's /opt/ml
  std::string log_file;               // the script's output (--output); "" for Slurm's default
  std::string partition;              // "" for the cluster's default partition
};

// Throws JobError (usage) for what Slurm cannot run yet: Pipe-mode channels (their FIFOs are
// fed from the submitting host), the mpi and parameter_server engines, and elastic jobs.
void check_runs_on_slurm(const JobSpec& spec);

// The script: #SBATCH directives (job name, nodes, tasks per node, time limit from
// max_run_seconds rounded up to a minute, output, partition), the spec's environment, and
// the srun of one `dtrain job slurm-host` per node.
std::string render_sbatch_script(const JobSpec& spec, const SbatchOptions& options);

// "D-HH:MM:SS" for Slurm's --time, whole minutes rounded up (Slurm counts minutes).
std::string slurm_time_limit(double seconds);

// `word` as one word for bash ('...' with embedded quotes escaped).
std::string shell_quote(const std::string& word);

}  // namespace dtrain::job
