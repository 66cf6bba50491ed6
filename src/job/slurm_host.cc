#include "job/slurm_host.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "job/container_layout.h"
#include "job/host_link.h"
#include "settings/env_setting.h"
#include "slurm/hostlist.h"

namespace dtrain::job {
namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "dtrain job slurm-host: %s\n", message.c_str());
  return 1;
}

}  // namespace

std::optional<int> slurm_node_index() {
  const auto index = settings::env_integer("SLURM_NODEID", 0, 1 << 20, "a node index");
  if (!index) return std::nullopt;
  return static_cast<int>(*index);
}

std::string slurm_host_root(const std::string& hosts_dir, int node_index) {
  return fmt::format("{}/algo-{}", hosts_dir, node_index + 1);
}

int exec_slurm_host(const std::string& dtrain_exe, const std::string& hosts_dir,
                    const std::vector<std::string>& command) {
  const char* node_id = std::getenv("SLURM_NODEID");
  const char* nodelist = std::getenv("SLURM_JOB_NODELIST");
  if (!node_id || !nodelist || !std::getenv("SLURM_STEP_ID")) {
    return fail(
        "not a task of a Slurm job step (SLURM_NODEID, SLURM_JOB_NODELIST, SLURM_STEP_ID); "
        "the batch script of `dtrain job render --target slurm` runs it through srun");
  }
  std::vector<std::string> nodes;
  try {
    nodes = slurm::expand_hostlist(nodelist);
  } catch (const slurm::SlurmError& e) {
    return fail(fmt::format("SLURM_JOB_NODELIST: {}", e.what()));
  }
  std::optional<int> node_index;
  try {
    node_index = slurm_node_index();
  } catch (const settings::SettingError& e) {
    return fail(e.what());
  }
  if (!node_index) return fail("SLURM_NODEID is empty");
  const int index = *node_index;
  if (index >= static_cast<int>(nodes.size())) {
    return fail(fmt::format("SLURM_NODEID={} is outside the allocation's {} nodes", node_id, nodes.size()));
  }

  // algo-N -> the address of the N-th node, in this host's own file (no two tasks write one).
  const std::string root = slurm_host_root(hosts_dir, index);
  std::string hosts_file;
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::optional<std::string> address = resolve_host(nodes[i]);
    if (!address) return fail(fmt::format("node {} (algo-{}) has no address this node can resolve", nodes[i], i + 1));
    hosts_file += fmt::format("{} algo-{} {}\n", *address, i + 1, nodes[i]);
  }
  const std::string hosts_path = root + "/hosts";
  try {
    write_text_file(hosts_path, hosts_file);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  ::setenv("SAGEMAKER_BASE_DIR", root.c_str(), 1);
  ::setenv("DTRAIN_HOSTS_FILE", hosts_path.c_str(), 1);
  ::setenv("DTRAIN_SLURM_HOSTS_DIR", hosts_dir.c_str(), 1);

  std::vector<std::string> argv = {dtrain_exe, "entrypoint", "--"};
  argv.insert(argv.end(), command.begin(), command.end());
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  ::execv(c_argv[0], c_argv.data());
  std::fprintf(stderr, "dtrain job slurm-host: cannot execute %s: %s\n", c_argv[0], std::strerror(errno));
  return 127;
}

}  // namespace dtrain::job
