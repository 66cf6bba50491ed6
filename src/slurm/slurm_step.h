// A task of a Slurm job step (started by srun) as Slurm describes it in the environment:
// where it is in the step (SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID), how big the step is
// (SLURM_STEP_NUM_TASKS, SLURM_STEP_NUM_NODES, SLURM_STEP_TASKS_PER_NODE) and on which
// nodes (SLURM_STEP_NODELIST). A batch script is no step task: Slurm sets no SLURM_STEP_*
// there, so a program run directly in the script stays a world of one.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "slurm/slurm_error.h"

namespace dtrain::slurm {

struct SlurmStep {
  int rank = 0;                    // SLURM_PROCID
  int size = 1;                    // SLURM_STEP_NUM_TASKS
  int local_rank = 0;              // SLURM_LOCALID
  int local_size = 1;              // this node's entry of SLURM_STEP_TASKS_PER_NODE
  int node_index = 0;              // SLURM_NODEID
  std::vector<std::string> nodes;  // SLURM_STEP_NODELIST, expanded
  std::string job_id;              // SLURM_JOB_ID
  std::string step_id;             // SLURM_STEP_ID

  int node_count() const { return static_cast<int>(nodes.size()); }
  // Where task 0 runs: Slurm numbers nodes in node-list order and gives task 0 to node 0.
  const std::string& first_node() const { return nodes.front(); }
};

// Reads a variable; nullptr when unset (std::getenv in production, a map in tests).
using EnvironmentReader = std::function<const char*(const char*)>;

// The step this process is a task of, or nothing outside a step (no SLURM_STEP_NUM_TASKS).
// Throws SlurmError naming the variable when a value is missing, malformed or inconsistent.
std::optional<SlurmStep> slurm_step_from_environment(const EnvironmentReader& read);

// The rendezvous port of a step when the user chose none: 20000..31999, a function of the
// job and step ids so that every task computes the same one without talking, and two steps
// of one job (or two jobs) whose task 0 share a node rarely meet on one port.
int derived_rendezvous_port(const std::string& job_id, const std::string& step_id);

}  // namespace dtrain::slurm
