// `dtrain job slurm-host`: one task per node of a job's Slurm allocation becomes that host's
// entry point. The task's node index (SLURM_NODEID) picks the host, algo-<index+1>, and its
// /opt/ml under the shared hosts directory; every host name algo-N is mapped to the address
// of the allocation's N-th node (DTRAIN_HOSTS_FILE), so the entry points find each other;
// DTRAIN_SLURM_HOSTS_DIR tells the master to start the ranks with srun and each rank which
// /opt/ml is its own.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtrain::job {

// This task's node index (SLURM_NODEID), or nullopt when unset or empty; a value that is
// not a whole number from 0 throws settings::SettingError naming it.
std::optional<int> slurm_node_index();

// The /opt/ml of the host a task on node `node_index` of the allocation plays.
std::string slurm_host_root(const std::string& hosts_dir, int node_index);

// Replaces this process with `dtrain_exe entrypoint -- command`, configured as above.
// Returns (with a message on stderr) only when that cannot be done: 1 outside a Slurm step
// or when a node's name does not resolve, 127 when the entry point cannot be executed.
int exec_slurm_host(const std::string& dtrain_exe, const std::string& hosts_dir,
                    const std::vector<std::string>& command);

}  // namespace dtrain::job
