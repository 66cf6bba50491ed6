// `dtrain run --slurm`: inside a Slurm allocation (salloc, sbatch), the ranks start as one
// job step through srun instead of ssh, as horovodrun does there. srun exports the launcher's
// environment to every task (the rendezvous store, the job token, the knobs); each rank then
// reads its place from SLURM_PROCID & co. (see src/slurm/slurm_step.h).
#pragma once

#include <string>
#include <vector>

#include "launch/rank_assignment.h"
#include "launch/worker_env.h"

namespace dtrain::launch {

// The allocation this process runs in, from SLURM_JOB_ID, SLURM_JOB_NODELIST and SLURM_NTASKS.
struct SlurmAllocation {
  std::string job_id;
  std::vector<std::string> nodes;
  int tasks = 0;  // SLURM_NTASKS (what sbatch/salloc -n asked for); 0 when unset
};

// Throws LaunchError (usage) outside an allocation or when its variables are malformed.
SlurmAllocation slurm_allocation_from_environment();

// Ranks over the allocation's nodes as srun's block distribution lays them out: every node
// gets ceil(np / nodes) ranks in order, the last used one what is left. Throws LaunchError
// (usage) when np < 1.
std::vector<RankPlacement> place_on_allocation(const SlurmAllocation& allocation, int np);

struct SrunSettings {
  std::vector<RankPlacement> placements;  // from place_on_allocation
  std::vector<std::string> extra_args;    // --slurm-args, split on whitespace
  std::vector<std::string> command;
};

// srun with the step's nodes and tasks spelled out (so rank r lands where `placements` says),
// --kill-on-bad-exit (one failed task ends the step), --label (the relay reads the task id
// from each line) and --overlap (the step may share CPUs with a step that waits for it, such
// as a job's entry points).
std::vector<std::string> srun_argv(const SrunSettings& settings);

}  // namespace dtrain::launch
