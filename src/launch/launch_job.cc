#include "launch/launch_job.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "launch/elastic_driver.h"
#include "launch/host_spec.h"
#include "launch/job_identity.h"
#include "launch/job_supervisor.h"
#include "launch/launch_error.h"
#include "launch/local_host.h"
#include "launch/mpirun_command.h"
#include "launch/mpirun_output.h"
#include "launch/output_relay.h"
#include "launch/rank_assignment.h"
#include "launch/rank_status_file.h"
#include "launch/signal_channel.h"
#include "launch/srun_command.h"
#include "launch/srun_output.h"
#include "launch/ssh_reachability.h"
#include "launch/worker_env.h"
#include "rendezvous/rendezvous_server.h"
#include "settings/env_setting.h"

namespace dtrain::launch {
namespace {

void require_at_least(const std::optional<double>& value, double minimum, const char* flag) {
  if (value && (!std::isfinite(*value) || *value < minimum)) {
    throw LaunchError::usage(
        fmt::format("{} must be a number >= {}, got {}", flag, format_env_number(minimum), *value));
  }
}

void validate(const LaunchOptions& o) {
  if (o.command.empty()) {
    throw LaunchError::usage("missing command (usage: dtrain run [options] -- command args...)");
  }
  if (o.host_list && o.hostfile) throw LaunchError::usage("use either -H or --hostfile, not both");
  require_at_least(o.start_timeout_s, 0, "--start-timeout");
  require_at_least(o.kill_grace_s, 0, "--kill-grace-s");
  require_at_least(o.fusion_threshold_mb, 0, "--fusion-threshold-mb");
  require_at_least(o.cycle_time_ms, 0, "--cycle-time-ms");
  require_at_least(o.stall_warning_s, 0, "--stall-warning-s");
  require_at_least(o.stall_shutdown_s, 0, "--stall-shutdown-s");
  if (o.ssh.port && (*o.ssh.port < 1 || *o.ssh.port > 65535)) {
    throw LaunchError::usage(fmt::format("-p: ssh port must be in 1..65535, got {}", *o.ssh.port));
  }
  if (o.ps.enabled) {
    if (o.use_mpi)
      throw LaunchError::usage("--ps and --mpi cannot be combined: parameter-server workers do not use MPI");
    if (o.ps.mode != "async" && o.ps.mode != "sync") {
      throw LaunchError::usage(fmt::format("--ps-mode must be async or sync, got '{}'", o.ps.mode));
    }
    if (o.ps.staleness < -1) {
      throw LaunchError::usage(fmt::format("--ps-staleness must be >= 0 (or -1: unbounded), got {}", o.ps.staleness));
    }
    if (!(o.ps.worker_timeout_s > 0)) {
      throw LaunchError::usage(
          fmt::format("--ps-worker-timeout must be a positive number of seconds, got {}", o.ps.worker_timeout_s));
    }
  }
  if (o.use_slurm) {
    if (o.use_mpi)
      throw LaunchError::usage("--slurm and --mpi cannot be combined: choose srun or mpirun to start the ranks");
    if (o.ps.enabled)
      throw LaunchError::usage("--slurm does not start parameter servers yet; use --ps without --slurm");
    if (o.host_list || o.hostfile) {
      throw LaunchError::usage("--slurm takes the hosts from the Slurm allocation; drop -H/--hostfile");
    }
    if (o.output_dir)
      throw LaunchError::usage("--output-filename is not supported with --slurm; use srun's --output in --slurm-args");
  }
  if (o.elastic.enabled()) {
    const char* other = o.use_mpi ? "--mpi" : o.use_slurm ? "--slurm" : o.ps.enabled ? "--ps" : nullptr;
    if (other)
      throw LaunchError::usage(fmt::format("--min-np/--max-np (an elastic job) cannot be combined with {}", other));
    if (o.elastic.min_np && *o.elastic.min_np < 1) {
      throw LaunchError::usage(fmt::format("--min-np must be at least 1, got {}", *o.elastic.min_np));
    }
    if (o.elastic.max_np && o.elastic.min_np && *o.elastic.max_np < *o.elastic.min_np) {
      throw LaunchError::usage(fmt::format("--max-np {} is below --min-np {}", *o.elastic.max_np, *o.elastic.min_np));
    }
    require_at_least(o.elastic.timeout_s, 0, "--elastic-timeout");
    require_at_least(o.elastic.host_cooldown_s, 0, "--host-cooldown");
    if (o.elastic.reset_limit < 0) {
      throw LaunchError::usage(fmt::format("--reset-limit must be >= 0, got {}", o.elastic.reset_limit));
    }
  }
  if (o.network_interface && o.network_interface->empty()) {
    throw LaunchError::usage("--network-interface: empty interface name");
  }
}

std::vector<HostSlots> requested_hosts(const LaunchOptions& o) {
  if (o.host_list) return parse_host_list(*o.host_list);
  if (o.hostfile) return read_hostfile(*o.hostfile);
  return {HostSlots{"localhost", o.np.value_or(1) < 1 ? 1 : o.np.value_or(1)}};
}

struct RendezvousEndpoint {
  std::string bind_address;
  std::string advertised_address;
};

RendezvousEndpoint choose_endpoint(bool all_local, const std::optional<std::string>& iface) {
  if (all_local) return {"127.0.0.1", "127.0.0.1"};
  if (iface) {
    auto address = interface_ipv4(*iface);
    if (!address) {
      throw LaunchError::usage(
          fmt::format("--network-interface {}: no such interface with an IPv4 address on this machine", *iface));
    }
    return {"0.0.0.0", *address};
  }
  return {"0.0.0.0", reachable_ipv4()};
}

// The launcher's store on an ephemeral port; its failure is the launcher's.
int start_rendezvous(rendezvous::RendezvousServer& server, const std::string& bind_address) {
  try {
    return server.start(bind_address);
  } catch (const std::exception& e) {
    std::string message = e.what();
    if (message.starts_with("dtrain: ")) message.erase(0, 8);
    throw LaunchError::runtime(message);
  }
}

std::string current_directory() {
  std::error_code ec;
  auto cwd = std::filesystem::current_path(ec);
  return ec ? std::string("/") : cwd.string();
}

// The runtime knobs the user set with flags, for every rank's environment.
WorkerEnvSettings knob_settings(const LaunchOptions& options) {
  WorkerEnvSettings knobs;
  knobs.network_interface = options.network_interface;
  knobs.timeline_filename = options.timeline_filename;
  knobs.timeline_mark_cycles = options.timeline_mark_cycles;
  knobs.autotune = options.autotune;
  knobs.autotune_log = options.autotune_log;
  knobs.fusion_threshold_mb = options.fusion_threshold_mb;
  knobs.cycle_time_ms = options.cycle_time_ms;
  knobs.stall_warning_s = options.stall_warning_s;
  knobs.stall_shutdown_s = options.stall_shutdown_s;
  knobs.verbose = options.verbose;
  return knobs;
}

// The mpirun command line for this job, and the DTRAIN_* knobs it forwards.
MpirunSettings mpirun_settings(const LaunchOptions& options, const std::vector<HostSlots>& hosts,
                               const std::vector<RankPlacement>& placements, const WorkerEnvSettings& settings) {
  MpirunSettings mpi;
  mpi.np = static_cast<int>(placements.size());
  for (const auto& h : hosts_used(placements)) {
    for (const auto& slots : hosts) {
      if (slots.name == h) mpi.hosts.push_back(slots);
    }
  }
  mpi.network_interface = options.network_interface;
  mpi.knobs = shared_knobs(dtrain_env_for(placements.front(), settings));
  for (const auto& [name, value] : dtrain_vars_of(current_environment())) mpi.forwarded_names.push_back(name);
  for (const char* name : {"PATH", "LD_LIBRARY_PATH", "OMP_NUM_THREADS"}) {
    if (std::getenv(name)) mpi.forwarded_names.push_back(name);
  }
  mpi.extra_args = split_arguments(options.mpi_args);
  mpi.running_as_root = geteuid() == 0;
  int local_ranks = 0;
  for (const auto& p : placements) local_ranks += is_local_host(p.host) ? 1 : 0;
  mpi.oversubscribed = local_ranks > static_cast<int>(std::thread::hardware_concurrency());
  if (options.wait_for_mpirun && options.ssh.agent) mpi.agent = *options.ssh.agent;
  mpi.command = options.command;
  return mpi;
}

// Replaces this process with mpirun; returns only on failure to start it.
int exec_mpirun(const MpirunSettings& mpi) {
  for (const auto& [name, value] : mpi.knobs) setenv(name.c_str(), value.c_str(), 1);
  const std::vector<std::string> argv = mpirun_argv(mpi);
  spdlog::debug("exec: {}", fmt::join(argv, " "));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  throw LaunchError::runtime(
      fmt::format("--mpi: cannot execute mpirun: {} (install openmpi-bin)", std::strerror(errno)));
}

// Writes a relayed line to the launcher's stdout or stderr in one piece.
void write_line(bool is_stderr, std::string_view line) {
  for (std::string_view rest = line; !rest.empty();) {
    ssize_t n = ::write(is_stderr ? 2 : 1, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    rest.remove_prefix(static_cast<size_t>(n));
  }
}

// How a launcher tool (mpirun, srun) that starts every rank itself ended.
struct ToolRun {
  int code = 0;
  std::optional<WorkerFailure> failure;  // the supervisor's, when the tool failed or never ran
};

// Runs `request` as the launcher's one supervised child (signals forwarded, SIGTERM then
// SIGKILL), every line of its output through `relay`, and waits for it.
ToolRun run_tool(const LaunchOptions& options, SignalChannel& signals, SpawnRequest request,
                 std::function<std::string(std::string_view line, bool is_stderr)> relay) {
  WorkerLaunch launch;
  launch.placement = RankPlacement{0, 1, 0, 1, 0, 1, "localhost"};
  launch.request = std::move(request);
  spdlog::debug("run: {}", fmt::join(launch.request.argv, " "));
  ToolRun ran;
  SupervisorOptions supervision;
  supervision.start_timeout_s = 0;  // the tool's ranks need not post to a rendezvous store
  supervision.kill_grace_s = options.kill_grace_s;
  supervision.prefix = [](const RankPlacement&, std::string_view) { return std::string(); };
  supervision.line_sink = [&relay](const RankPlacement&, bool is_stderr, std::string_view line) {
    write_line(is_stderr, relay(line, is_stderr));
  };
  supervision.on_failure = [&ran](const WorkerFailure& f) { ran.failure = f; };
  JobSupervisor supervisor(std::move(supervision), signals);
  ran.code = supervisor.run({launch});
  return ran;
}

// A tool that never ran: "--mpi: cannot execute 'mpirun': ... (install openmpi-bin)".
void describe_unstarted(WorkerFailure& failure, const char* flag, const char* package) {
  const std::string who = "rank 0 (host localhost): ";
  if (failure.description.starts_with(who)) failure.description.erase(0, who.size());
  failure.description = fmt::format("{}: {} (install {})", flag, failure.description, package);
}

// The failure to the caller (the job entry point), or as dtrain run's last line.
void deliver(const LaunchOptions& options, const WorkerFailure& failure) {
  if (options.on_failure) {
    options.on_failure(failure);
  } else {
    std::fprintf(stderr, "dtrain run: %s\n", failure.description.c_str());
  }
}

// Runs mpirun as the supervised child and waits for it. mpirun itself stops every rank when
// one fails; its report of the first failed rank becomes the failure.
int run_mpirun(const LaunchOptions& options, const MpirunSettings& mpi, const std::vector<RankPlacement>& placements) {
  // Before any thread exists, so every thread inherits the blocked signals.
  SignalChannel signals;
  MpirunOutput output(placements, options.tag_output_with_host);
  ToolRun ran = run_tool(options, signals,
                         SpawnRequest{mpirun_argv(mpi), merge_environment(current_environment(), mpi.knobs), false},
                         [&output](std::string_view line, bool) { return output.relay(line); });
  if (!ran.failure) return ran.code;
  WorkerFailure failure = *ran.failure;
  if (!failure.wait_status) {
    describe_unstarted(failure, "--mpi", "openmpi-bin");
  } else {
    failure.description = output.describe_failure(*failure.wait_status);
    failure.placement =
        output.failed_rank().value_or(RankPlacement{-1, static_cast<int>(placements.size()), 0, 0, 0, 0, "mpirun"});
  }
  deliver(options, failure);
  return ran.code;
}

// `dtrain run --slurm`: the launcher serves the store, srun starts every rank as one step
// (the runtime reads each rank's place from SLURM_*), and srun's report of the first failed
// task becomes the failure, as run_mpirun does for mpirun.
int run_srun(const LaunchOptions& options) {
  const SlurmAllocation allocation = slurm_allocation_from_environment();
  const int np =
      options.np.value_or(allocation.tasks > 0 ? allocation.tasks : static_cast<int>(allocation.nodes.size()));
  const std::vector<RankPlacement> placements = place_on_allocation(allocation, np);
  // Before any thread exists, so every thread inherits the blocked signals.
  SignalChannel signals;
  const JobIdentity identity = JobIdentity::generate();
  RendezvousEndpoint endpoint = choose_endpoint(false, options.network_interface);
  rendezvous::RendezvousServer rendezvous(identity.token, np);
  const int port = start_rendezvous(rendezvous, endpoint.bind_address);

  WorkerEnvSettings settings = knob_settings(options);
  EnvVars env = shared_knobs(dtrain_env_for(placements.front(), settings));
  env.insert(env.end(), {{"DTRAIN_RENDEZVOUS_ADDR", endpoint.advertised_address},
                         {"DTRAIN_RENDEZVOUS_PORT", std::to_string(port)},
                         {"DTRAIN_JOB_TOKEN", identity.token},
                         {"DTRAIN_JOB_ID", identity.job_id}});
  // A launcher that is itself a rank of an outer `dtrain run` must not hand its rank and size
  // on: they would override what Slurm tells each rank.
  std::vector<std::string> parent_env;
  for (const auto& kv : current_environment()) {
    if (!kv.starts_with("DTRAIN_RANK=") && !kv.starts_with("DTRAIN_SIZE=")) parent_env.push_back(kv);
  }
  SrunSettings srun{placements, split_arguments(options.slurm_args), options.command};
  const std::vector<std::string> argv = srun_argv(srun);
  spdlog::debug("job {}: rendezvous store on {}:{}", identity.job_id, endpoint.advertised_address, port);

  SrunOutput output(placements, options.tag_output_with_host);
  ToolRun ran = run_tool(options, signals, SpawnRequest{argv, merge_environment(parent_env, env), false},
                         [&output](std::string_view line, bool is_stderr) { return output.relay(line, is_stderr); });
  rendezvous.stop();
  if (!ran.failure) return ran.code;
  WorkerFailure failure = *ran.failure;
  if (!failure.wait_status) {
    describe_unstarted(failure, "--slurm", "slurm-client");
  } else {
    failure.description = output.describe_failure(*failure.wait_status);
    failure.placement = output.failed_rank().value_or(RankPlacement{-1, np, 0, 0, 0, 0, "srun"});
    if (auto status = output.failed_wait_status()) failure.wait_status = status;
  }
  deliver(options, failure);
  return ran.code;
}

// How a worker process on `host` starts: `command` itself on this machine, else ssh running the
// launcher's remote script there, which also forwards the user's own DTRAIN_* settings (ours win).
SpawnRequest worker_request(const LaunchOptions& options, const std::string& host, bool remote,
                            const EnvVars& dtrain_env, const std::vector<std::string>& command,
                            const std::vector<std::string>& parent_env, const std::string& cwd) {
  if (!remote) return SpawnRequest{command, merge_environment(parent_env, dtrain_env), false};
  EnvVars remote_env = dtrain_vars_of(merge_environment(parent_env, dtrain_env));
  std::string script = remote_worker_script(cwd, remote_env, command, options.kill_grace_s);
  return SpawnRequest{ssh_worker_argv(host, options.ssh, remote_shell_command(script)), parent_env, true};
}

// What every supervision of dtrain run's own workers shares: grace, raw output, prefixes, failure.
SupervisorOptions worker_supervision(const LaunchOptions& options) {
  SupervisorOptions supervision;
  supervision.kill_grace_s = options.kill_grace_s;
  supervision.output_dir = options.output_dir;
  if (options.tag_output_with_host) {
    supervision.prefix = [](const RankPlacement& p, std::string_view stream) {
      return relay_prefix(p.rank, p.host, stream);
    };
  }
  supervision.on_failure = options.on_failure;
  if (options.rank_status_file) {
    auto ranks = std::make_shared<RankStatusFile>(*options.rank_status_file);
    supervision.on_start = [ranks](const RankPlacement& p, pid_t pid) { ranks->started(p, pid); };
    supervision.on_ready = [ranks](const RankPlacement& p) { ranks->reached_rendezvous(p.rank); };
    supervision.on_exit = [ranks](const RankPlacement& p, int wait_status) { ranks->ended(p, wait_status); };
  }
  return supervision;
}

// DTRAIN_TIMEOUT_S as the workers will read it: how long a round waits for a member.
double worker_timeout_s() {
  try {
    return settings::env_seconds("DTRAIN_TIMEOUT_S").value_or(300);
  } catch (const settings::SettingError& e) {
    throw LaunchError::usage(e.what());
  }
}

// `dtrain run --min-np/--max-np`: the supervisor runs whatever workers the elastic driver starts;
// they meet through rounds in the store (docs/elastic.md).
int run_elastic(const LaunchOptions& options) {
  const auto& elastic = options.elastic;
  std::vector<HostSlots> hosts;
  if (options.host_list || options.hostfile || !elastic.discovery_script) hosts = requested_hosts(options);
  const int max_np = elastic.max_np.value_or(options.np.value_or(total_slots(hosts)));
  const int min_np = elastic.min_np.value_or(1);
  if (max_np < 1) throw LaunchError::usage("--max-np is needed when the hosts come from --host-discovery-script alone");
  if (max_np < min_np) throw LaunchError::usage(fmt::format("--max-np {} is below --min-np {}", max_np, min_np));

  std::vector<std::string> remote_hosts;
  for (const auto& h : hosts) {
    if (!is_local_host(h.name)) remote_hosts.push_back(h.name);
  }
  const bool all_local = remote_hosts.empty() && !elastic.discovery_script;
  RendezvousEndpoint endpoint = choose_endpoint(all_local, options.network_interface);
  // Before any thread exists, so every thread inherits the blocked signals.
  SignalChannel signals;
  if (!remote_hosts.empty()) require_ssh_reachable(remote_hosts, options.ssh);

  const JobIdentity identity = JobIdentity::generate();
  rendezvous::RendezvousServer rendezvous(identity.token, max_np);
  const int port = start_rendezvous(rendezvous, endpoint.bind_address);
  WorkerEnvSettings settings = knob_settings(options);
  settings.rendezvous_addr = endpoint.advertised_address;
  settings.rendezvous_port = port;
  settings.identity = identity;
  const std::vector<std::string> parent_env = current_environment();
  const std::string cwd = current_directory();

  ElasticDriverOptions driver_options;
  driver_options.settings = ElasticSettings{min_np,
                                            max_np,
                                            options.start_timeout_s,
                                            worker_timeout_s(),
                                            elastic.timeout_s,
                                            elastic.host_cooldown_s,
                                            elastic.reset_limit};
  driver_options.discovery_script = elastic.discovery_script;
  driver_options.is_remote = [](const std::string& host) { return !is_local_host(host); };
  driver_options.make_launch = [&](int worker, const std::string& host) {
    // A worker learns its rank and size from the round it joins; until then it is a world of one.
    WorkerLaunch launch;
    launch.placement = RankPlacement{0, 1, 0, 1, 0, 1, host};
    EnvVars env = dtrain_env_for(launch.placement, settings);
    env.emplace_back("DTRAIN_ELASTIC_WORKER", std::to_string(worker));
    launch.placement.rank = worker;
    launch.name = fmt::format("worker {}", worker);
    launch.request = worker_request(options, host, !is_local_host(host), env, options.command, parent_env, cwd);
    launch.rank_on_this_host = is_local_host(host);
    return launch;
  };
  ElasticDriver driver(std::move(driver_options), hosts, rendezvous);
  spdlog::debug("elastic job {}: {}..{} workers on {}; rendezvous store on {}:{}", identity.job_id, min_np, max_np,
                describe_hosts(hosts), endpoint.advertised_address, port);

  SupervisorOptions supervision = worker_supervision(options);
  supervision.elastic = &driver;
  JobSupervisor supervisor(std::move(supervision), signals);
  const int exit_code = supervisor.run({});
  rendezvous.stop();
  return exit_code;
}

}  // namespace

// This program's own path: `dtrain run --ps` starts the parameter servers as `<it> ps-server`.
static std::string current_executable() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("dtrain") : path.string();
}

int launch_job(const LaunchOptions& options) {
  validate(options);
  if (options.use_slurm) return run_srun(options);
  if (options.elastic.enabled()) return run_elastic(options);
  std::vector<HostSlots> hosts = requested_hosts(options);
  int np = options.np.value_or(total_slots(hosts));
  std::vector<RankPlacement> placements = assign_ranks(hosts, np);
  if (options.use_mpi) {
    MpirunSettings mpi = mpirun_settings(options, hosts, placements, knob_settings(options));
    return options.wait_for_mpirun ? run_mpirun(options, mpi, placements) : exec_mpirun(mpi);
  }

  std::vector<std::string> used = hosts_used(placements);
  std::vector<std::string> remote_hosts;
  for (const auto& h : used) {
    if (!is_local_host(h)) remote_hosts.push_back(h);
  }
  bool all_local = remote_hosts.empty();
  RendezvousEndpoint endpoint = choose_endpoint(all_local, options.network_interface);
  spdlog::debug("{} rank{} on {}; remote hosts: [{}]", np, np == 1 ? "" : "s", describe_hosts(hosts),
                fmt::join(remote_hosts, ", "));

  // Before any thread exists, so every thread inherits the blocked signals.
  SignalChannel signals;

  if (!remote_hosts.empty()) require_ssh_reachable(remote_hosts, options.ssh);

  JobIdentity identity = JobIdentity::generate();
  // Parameter servers report ready after the workers' ranks: np, np+1, ...
  const int servers = options.ps.enabled ? static_cast<int>(used.size()) : 0;
  rendezvous::RendezvousServer rendezvous(identity.token, np + servers);
  int port = start_rendezvous(rendezvous, endpoint.bind_address);
  spdlog::debug("job {}: rendezvous store on {}:{} (bound to {})", identity.job_id, endpoint.advertised_address, port,
                endpoint.bind_address);

  WorkerEnvSettings settings = knob_settings(options);
  settings.rendezvous_addr = endpoint.advertised_address;
  settings.rendezvous_port = port;
  settings.identity = identity;

  std::vector<std::string> parent_env = current_environment();
  std::string cwd = current_directory();
  std::vector<WorkerLaunch> launches;
  auto request_for = [&](const RankPlacement& placement, const std::vector<std::string>& command) {
    EnvVars dtrain_env = dtrain_env_for(placement, settings);
    if (servers > 0) dtrain_env.emplace_back("DTRAIN_PS_SERVERS", std::to_string(servers));
    const bool remote = std::find(remote_hosts.begin(), remote_hosts.end(), placement.host) != remote_hosts.end();
    return worker_request(options, placement.host, remote, dtrain_env, command, parent_env, cwd);
  };
  // The servers first, so they are listening by the time the workers look for them.
  const std::string program = current_executable();  // `<it> ps-server` on every host
  for (int i = 0; i < servers; ++i) {
    WorkerLaunch launch;
    launch.placement = RankPlacement{np + i, np, 0, 1, i, servers, used[static_cast<size_t>(i)]};
    launch.service = true;
    launch.name = fmt::format("ps{}", i);
    launch.request = request_for(
        launch.placement, {program, "ps-server", "--index", std::to_string(i), "--mode", options.ps.mode, "--staleness",
                           std::to_string(options.ps.staleness), "--worker-timeout",
                           format_env_number(options.ps.worker_timeout_s), "--ready-rank", std::to_string(np + i)});
    launches.push_back(std::move(launch));
  }
  for (const auto& placement : placements) {
    WorkerLaunch launch;
    launch.placement = placement;
    launch.request = request_for(placement, options.command);
    launch.rank_on_this_host =
        std::find(remote_hosts.begin(), remote_hosts.end(), placement.host) == remote_hosts.end();
    launches.push_back(std::move(launch));
  }

  SupervisorOptions supervision = worker_supervision(options);
  supervision.start_timeout_s = options.start_timeout_s;
  supervision.is_ready = [&rendezvous](int rank) { return rendezvous.is_ready(rank); };
  supervision.tolerate_worker_failures = options.ps.enabled;

  JobSupervisor supervisor(std::move(supervision), signals);
  int exit_code = supervisor.run(std::move(launches));
  rendezvous.stop();
  return exit_code;
}

}  // namespace dtrain::launch
