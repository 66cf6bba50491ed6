#include "launch/srun_command.h"

#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "launch/launch_error.h"
#include "settings/env_setting.h"
#include "slurm/hostlist.h"

namespace dtrain::launch {

SlurmAllocation slurm_allocation_from_environment() {
  auto var = [](const char* name) -> std::string {
    const char* value = std::getenv(name);
    return value ? value : "";
  };
  SlurmAllocation allocation;
  allocation.job_id = var("SLURM_JOB_ID");
  const std::string nodelist = var("SLURM_JOB_NODELIST");
  if (allocation.job_id.empty() || nodelist.empty()) {
    throw LaunchError::usage(
        "--slurm runs inside a Slurm allocation (salloc or an sbatch script): SLURM_JOB_ID/SLURM_JOB_NODELIST are not "
        "set");
  }
  try {
    allocation.nodes = slurm::expand_hostlist(nodelist);
  } catch (const slurm::SlurmError& e) {
    throw LaunchError::usage(fmt::format("--slurm: SLURM_JOB_NODELIST: {}", e.what()));
  }
  try {
    if (const auto tasks = settings::env_integer("SLURM_NTASKS", 1, 1 << 24, "a task count")) {
      allocation.tasks = static_cast<int>(*tasks);
    }
  } catch (const settings::SettingError& e) {
    throw LaunchError::usage(fmt::format("--slurm: {}", e.what()));
  }
  return allocation;
}

std::vector<RankPlacement> place_on_allocation(const SlurmAllocation& allocation, int np) {
  if (np < 1) throw LaunchError::usage(fmt::format("-np must be at least 1, got {}", np));
  const int node_count = static_cast<int>(allocation.nodes.size());
  const int per_node = (np + node_count - 1) / node_count;
  std::vector<HostSlots> hosts;
  for (const auto& node : allocation.nodes) hosts.push_back({node, per_node});
  return assign_ranks(hosts, np);
}

std::vector<std::string> srun_argv(const SrunSettings& s) {
  const std::vector<std::string> nodes = hosts_used(s.placements);
  int per_node = 0;
  for (const auto& p : s.placements) per_node = std::max(per_node, p.local_size);
  std::vector<std::string> argv = {"srun",
                                   fmt::format("--nodes={}", nodes.size()),
                                   fmt::format("--nodelist={}", fmt::join(nodes, ",")),
                                   fmt::format("--ntasks={}", s.placements.size()),
                                   fmt::format("--ntasks-per-node={}", per_node),
                                   "--distribution=block",
                                   "--kill-on-bad-exit=1",
                                   "--label",
                                   "--overlap",
                                   "--export=ALL"};
  argv.insert(argv.end(), s.extra_args.begin(), s.extra_args.end());
  argv.insert(argv.end(), s.command.begin(), s.command.end());
  return argv;
}

}  // namespace dtrain::launch
