#include "job/entrypoint.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "job/container_layout.h"
#include "job/host_link.h"
#include "job/job_error.h"
#include "job/job_spec.h"
#include "job/slurm_host.h"
#include "launch/launch_error.h"
#include "launch/launch_job.h"
#include "launch/local_spawner.h"
#include "launch/signal_channel.h"
#include "settings/env_setting.h"
#include "job/training_environment.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

void clear_outcome(const ContainerLayout& layout) {
  std::error_code ec;
  fs::remove(layout.success_file(), ec);
  fs::remove(layout.failure_file(), ec);
}

void write_success(const ContainerLayout& layout) {
  try {
    write_text_file(layout.success_file(), "");
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
}

void write_failure(const ContainerLayout& layout, const std::string& reason) {
  try {
    write_text_file(layout.failure_file(), limit_failure_reason(reason));
  } catch (const std::exception& e) {
    spdlog::error("{}", e.what());
  }
}

std::vector<std::string> algorithm_command(const EntrypointOptions& options, const TrainingEnvironment& env) {
  if (!options.command.empty()) return options.command;
  if (env.user_entry_point) return split_words(*env.user_entry_point);
  return {};
}

// The toolkit's fixed mpirun options, then the spec's custom_mpi_options. Ranks are not
// bound to cores: the hosts of a local job share one machine's cores, and each host's
// daemon would bind its ranks to the same ones.
std::string mpirun_options(const std::string& custom) {
  std::string options = custom.find("bind-to") == std::string::npos ? "--bind-to none" : "";
  if (!custom.empty()) options += (options.empty() ? "" : " ") + custom;
  return options;
}

// The master cannot start the algorithm: it still tells every other host (so they exit
// rather than wait), records the reason, and exits 2.
int fail_before_launch(const EntrypointOptions& options, const TrainingEnvironment& env, const ContainerLayout& layout,
                       const std::string& reason) {
  std::vector<std::string> others;
  for (const auto& h : env.hosts) {
    if (h != env.current_host) others.push_back(h);
  }
  MasterLinks links;
  try {
    links.connect_all(others, env.current_host, options.port, options.host_wait_s);
  } catch (const JobError&) {
    // Hosts that cannot be reached will stop on their own when the master disappears.
  }
  links.report_end({2, reason});
  write_failure(layout, reason);
  std::fprintf(stderr, "dtrain entrypoint: %s\n", reason.c_str());
  return 2;
}

// A host of a job on Slurm (`dtrain job slurm-host` set this).
bool on_slurm() {
  const char* hosts_dir = std::getenv("DTRAIN_SLURM_HOSTS_DIR");
  return hosts_dir && *hosts_dir;
}

int run_master(const EntrypointOptions& options, const TrainingEnvironment& env,
               const std::vector<std::string>& command) {
  const ContainerLayout& layout = env.layout;
  int ppn = env.processes_per_host();
  std::optional<ElasticSpec> elastic;
  try {
    elastic = env.elastic();
  } catch (const JobError& e) {
    return fail_before_launch(options, env, layout, fmt::format("ClientError: {}", e.what()));
  }
  std::vector<std::string> others;
  for (const auto& h : env.hosts) {
    if (h != env.current_host) others.push_back(h);
  }
  spdlog::info("{} is the master: {} host{} x {} process{}{}", env.current_host, env.hosts.size(),
               env.hosts.size() == 1 ? "" : "s", ppn, ppn == 1 ? "" : "es",
               elastic ? fmt::format(", elastic: {}..{} hosts", elastic->min_hosts, elastic->max_hosts) : "");

  MasterLinks links;
  try {
    links.connect_all(others, env.current_host, options.port, options.host_wait_s);
  } catch (const JobError& e) {
    std::string reason = fmt::format("ClientError: {}", e.what());
    links.report_end({1, reason});
    write_failure(layout, reason);
    std::fprintf(stderr, "dtrain entrypoint: %s\n", reason.c_str());
    return 1;
  }
  spdlog::info("every host is reachable");

  launch::LaunchOptions launch;
  launch.np = ppn * static_cast<int>(env.hosts.size());
  if (on_slurm()) {
    // The hosts are the allocation's nodes in order (job/slurm_host.h): one srun step starts
    // every rank, and each finds its host's /opt/ml from its node index.
    launch.use_slurm = true;
  } else {
    std::string host_list;
    for (const auto& h : env.hosts) host_list += fmt::format("{}{}:{}", host_list.empty() ? "" : ",", h, ppn);
    launch.host_list = host_list;
  }
  if (!env.network_interface_name.empty()) launch.network_interface = env.network_interface_name;
  launch.start_timeout_s = 0;  // the algorithm need not use the dtrain runtime
  launch.kill_grace_s = options.kill_grace_s;
  launch.ssh.agent = options.agent;
  launch.tag_output_with_host = true;
  // The job runner's ranks.json in the job's directory (the dashboard shows it).
  if (const char* ranks = std::getenv("DTRAIN_RANK_STATUS_FILE"); ranks && *ranks) launch.rank_status_file = ranks;
  if (env.engine() == "mpi") {
    // As SageMaker's toolkit does: the master runs mpirun across every host and waits for it;
    // Open MPI starts its daemons on the other hosts through the same agent (or ssh).
    launch.use_mpi = true;
    launch.wait_for_mpirun = true;
    launch.mpi_args = mpirun_options(env.custom_mpi_options());
  } else if (env.engine() == "parameter_server") {
    // One parameter server per host beside the ranks (the workers); see docs/parameter-servers.md.
    launch.ps.enabled = true;
  }
  if (elastic) {
    // docs/elastic.md: the launcher goes on while min_hosts hosts' workers live; a worker host
    // that is lost is set aside (its entry point's end is the job runner's concern). The first
    // round waits for every worker as long as the hosts wait for each other.
    launch.np.reset();
    launch.elastic.min_np = elastic->min_hosts * ppn;
    launch.elastic.max_np = elastic->max_hosts * ppn;
    launch.elastic.timeout_s = elastic->timeout_s;
    launch.elastic.host_cooldown_s = elastic->host_cooldown_s;
    launch.elastic.reset_limit = elastic->reset_limit;
    launch.start_timeout_s = options.host_wait_s;
  }
  launch.command = {options.dtrain_exe, "entrypoint", "--as-rank", "--"};
  launch.command.insert(launch.command.end(), command.begin(), command.end());
  std::optional<launch::WorkerFailure> failure;
  launch.on_failure = [&failure](const launch::WorkerFailure& f) { failure = f; };

  int code = 0;
  std::string reason;
  try {
    code = launch::launch_job(launch);
    if (code != 0 && failure) {
      if (failure->wait_status) code = launch::exit_code_of(*failure->wait_status);
      reason = fmt::format("AlgorithmError: {}", failure->description);
    } else if (code != 0) {
      reason = code > 128 ? fmt::format("AlgorithmError: the job was stopped by {}", launch::signal_name(code - 128))
                          : fmt::format("AlgorithmError: the job failed with status {}", code);
    }
  } catch (const launch::LaunchError& e) {
    code = 1;
    reason = fmt::format("ClientError: {}", e.what());
  } catch (const std::exception& e) {
    code = 1;
    reason = fmt::format("InternalServerError: {}", e.what());
  }
  if (code == 0) {
    write_success(layout);
  } else {
    write_failure(layout, reason);
    std::fprintf(stderr, "dtrain entrypoint: %s\n", limit_failure_reason(reason).c_str());
  }
  links.report_end({code, reason});
  return code;
}

int run_worker(const EntrypointOptions& options, const TrainingEnvironment& env) {
  const ContainerLayout& layout = env.layout;
  std::string bind = "0.0.0.0";
  // On hosts that share one network (process hosts) each listens on its own address.
  if (auto own = resolve_host(env.current_host); own && own->starts_with("127.")) bind = *own;
  WorkerLink link;
  try {
    link.listen(bind, options.port);
  } catch (const JobError& e) {
    write_failure(layout, fmt::format("ClientError: {}: {}", env.current_host, e.what()));
    std::fprintf(stderr, "dtrain entrypoint: %s\n", e.what());
    return 1;
  }
  spdlog::info("{} waits for the master {}", env.current_host, env.master_hostname);
  bool connected = false;
  try {
    connected = link.accept_master(options.host_wait_s);
  } catch (const JobError& e) {  // a master of another dtrain build
    write_failure(layout, fmt::format("ClientError: {}: {}", env.current_host, e.what()));
    std::fprintf(stderr, "dtrain entrypoint: %s\n", e.what());
    return 1;
  }
  if (!connected) {
    std::string reason = fmt::format("ClientError: {}: the master {} did not connect within {} s", env.current_host,
                                     env.master_hostname, options.host_wait_s);
    write_failure(layout, reason);
    std::fprintf(stderr, "dtrain entrypoint: %s\n", reason.c_str());
    return 1;
  }
  std::optional<JobEnd> end = link.wait_for_end();
  if (!end) {
    std::string reason = fmt::format("ClientError: {}: {} before the job ended", env.current_host, link.how_lost());
    write_failure(layout, reason);
    std::fprintf(stderr, "dtrain entrypoint: %s\n", reason.c_str());
    return 1;
  }
  spdlog::info("{}: the master reports the end: status {}", env.current_host, end->exit_code);
  if (end->exit_code == 0) {
    write_success(layout);
  } else {
    write_failure(layout, end->reason);
  }
  link.acknowledge_end();
  // This host did its part: its own status is 0 whatever the job's outcome
  // (the master's status is the job's). A worker exiting non-zero here would
  // race the master's own exit in whatever supervises both.
  return 0;
}

}  // namespace

std::string limit_failure_reason(const std::string& reason) {
  constexpr size_t kLimit = 1024;
  if (reason.size() <= kLimit) return reason;
  size_t cut = kLimit;
  while (cut > 0 && (static_cast<unsigned char>(reason[cut]) & 0xC0) == 0x80) --cut;
  return reason.substr(0, cut);
}

EntrypointOptions entrypoint_options_from_environment() {
  EntrypointOptions options;
  options.base_dir = ContainerLayout::default_base_dir();
  if (const char* agent = std::getenv("DTRAIN_LAUNCH_AGENT"); agent && *agent) {
    options.agent = split_words(agent);
  }
  options.port = host_link_port();
  if (const auto wait = settings::env_seconds("DTRAIN_HOST_WAIT_S")) options.host_wait_s = *wait;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  options.dtrain_exe = ec ? "dtrain" : self.string();
  return options;
}

int run_entrypoint(const EntrypointOptions& options) {
  ContainerLayout layout(options.base_dir);
  TrainingEnvironment env;
  try {
    env = TrainingEnvironment::read(layout);
  } catch (const std::exception& e) {
    std::string reason = fmt::format("ClientError: cannot read the training configuration: {}", e.what());
    write_failure(layout, reason);
    std::fprintf(stderr, "dtrain entrypoint: %s\n", reason.c_str());
    return 1;
  }
  clear_outcome(layout);
  if (!env.is_master) return run_worker(options, env);

  std::vector<std::string> command = algorithm_command(options, env);
  if (command.empty()) {
    std::string reason =
        "ClientError: no algorithm to run: give it after `dtrain entrypoint --`, or set "
        "SAGEMAKER_PROGRAM or the sagemaker_program hyperparameter";
    return fail_before_launch(options, env, layout, reason);
  }
  return run_master(options, env, command);
}

int exec_as_rank(const std::string& base_dir, const std::vector<std::string>& command) {
  if (command.empty()) {
    std::fprintf(stderr, "dtrain entrypoint --as-rank: missing command\n");
    return 2;
  }
  // On Slurm srun hands every rank the master's environment; the rank's own host is its node's.
  std::string own_base_dir = base_dir;
  std::optional<int> node_index;
  if (on_slurm()) {
    try {
      node_index = slurm_node_index();
    } catch (const settings::SettingError& e) {
      std::fprintf(stderr, "dtrain entrypoint --as-rank: %s\n", e.what());
      return 2;
    }
  }
  const bool slurm_rank = node_index.has_value();
  if (slurm_rank) own_base_dir = slurm_host_root(std::getenv("DTRAIN_SLURM_HOSTS_DIR"), *node_index);
  TrainingEnvironment env;
  try {
    env = TrainingEnvironment::read(ContainerLayout(own_base_dir));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dtrain entrypoint --as-rank: %s\n", e.what());
    return 1;
  }
  for (const auto& [name, value] : env.env_vars()) ::setenv(name.c_str(), value.c_str(), 1);
  ::setenv("SAGEMAKER_BASE_DIR", env.layout.base_dir().c_str(), 1);
  // Ranks started by mpirun learn no host name from the launcher; the runtime groups ranks
  // into hosts by it (shared memory within, the engine across), so give it this host's. On
  // Slurm the node's own name does that, and resolves where algo-N need not.
  if (!slurm_rank) ::setenv("DTRAIN_HOSTNAME", env.current_host.c_str(), 0);
  std::vector<std::string> argv = command;
  for (const auto& a : env.user_args()) argv.push_back(a);
  std::vector<char*> c_argv;
  for (auto& a : argv) c_argv.push_back(a.data());
  c_argv.push_back(nullptr);
  ::execvp(c_argv[0], c_argv.data());
  std::fprintf(stderr, "dtrain entrypoint --as-rank: cannot execute '%s': %s\n", c_argv[0], std::strerror(errno));
  return 127;
}

}  // namespace dtrain::job
