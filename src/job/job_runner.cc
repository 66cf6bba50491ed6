#include "job/job_runner.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "job/container_layout.h"
#include "job/entrypoint.h"
#include "job/host_link.h"
#include "job/host_staging.h"
#include "job/job_error.h"
#include "job/job_outputs.h"
#include "job/job_report.h"
#include "job/job_status.h"
#include "launch/job_supervisor.h"
#include "launch/local_spawner.h"
#include "launch/signal_channel.h"
#include "launch/worker_env.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

int free_loopback_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  int port = 29417;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  if (fd >= 0) ::close(fd);
  return port;
}

std::string default_work_dir(const std::string& name) {
  const char* tmp = std::getenv("TMPDIR");
  return fmt::format("{}/dtrain-job-{}-{}", tmp && *tmp ? tmp : "/tmp", name, ::getpid());
}

void announce_job(const JobSpec& spec, const RunOptions& options) {
  std::printf("dtrain job %s: %d host%s (%s) x %d process%s\n", spec.name.c_str(), spec.instance_count,
              spec.instance_count == 1 ? "" : "s", to_string(options.hosts).c_str(), spec.processes_per_host,
              spec.processes_per_host == 1 ? "" : "es");
  std::fflush(stdout);
}

// ---- running the hosts ----

// Every host runs the entry point; the master launches the ranks on all.
std::vector<launch::WorkerLaunch> entrypoint_launches(const JobSpec& spec, const RunOptions& options,
                                                      const LocalCluster& cluster, const std::string& ranks_file) {
  const std::vector<LocalHost>& hosts = cluster.hosts();
  int port = options.hosts == HostKind::kProcess ? free_loopback_port() : 29417;
  std::string agent = fmt::format("{} job host-exec --table {}", options.dtrain_exe, cluster.table_file());
  std::vector<std::string> parent_env = launch::current_environment();
  std::vector<launch::WorkerLaunch> launches;
  for (size_t i = 0; i < hosts.size(); ++i) {
    const LocalHost& host = hosts[i];
    launch::WorkerLaunch l;
    l.placement.rank = static_cast<int>(i);
    l.placement.size = static_cast<int>(hosts.size());
    l.placement.local_size = 1;
    l.placement.cross_rank = static_cast<int>(i);
    l.placement.cross_size = static_cast<int>(hosts.size());
    l.placement.host = host.name;
    l.request.argv = cluster.exec_prefix(host);
    for (const auto& word : {options.dtrain_exe, std::string("entrypoint"), std::string("--")}) {
      l.request.argv.push_back(word);
    }
    l.request.argv.insert(l.request.argv.end(), spec.command.begin(), spec.command.end());
    launch::EnvVars env = {
        {"SAGEMAKER_BASE_DIR", host.root},          {"DTRAIN_HOSTS_FILE", cluster.hosts_file()},
        {"DTRAIN_HOST_PORT", std::to_string(port)}, {"DTRAIN_LAUNCH_AGENT", agent},
        {"TRAINING_JOB_NAME", spec.name},
    };
    // The master's launcher keeps the ranks' states in the job's directory.
    if (i == 0) env.push_back({"DTRAIN_RANK_STATUS_FILE", ranks_file});
    for (const auto& kv : spec.environment) env.push_back(kv);
    l.request.env = launch::merge_environment(parent_env, env);
    launches.push_back(std::move(l));
  }
  return launches;
}

// What the supervisor saw while the hosts ran.
struct HostsRun {
  std::map<std::string, int> host_exit;  // exit code by host name, for the hosts that ended
  std::vector<std::string> ended;        // the same hosts, in the order the supervisor saw them end
  // The supervisor's first failure (it stopped every other host then): a host's entry point,
  // or, with placement.rank -1, the time limit.
  std::optional<launch::WorkerFailure> failure;
  // Elastic jobs: worker hosts whose entry point failed while the others went on, and why;
  // and those whose entry point ended because the master's did (it closed their link).
  std::map<std::string, std::string> lost;
  std::vector<std::string> master_gone;
  int supervisor_code = 0;
  double seconds = 0;
  int left_behind = 0;  // processes killed in the hosts after the supervisor returned
};

std::string describe_host_end(const std::string& host, int wait_status);

// Elastic jobs: a worker host's failed entry point (its link to the master broke, the host went
// down, it was killed) loses that host; the launcher on the master goes on without its workers.
// The master's failure still ends the job: a worker host whose link the master closed (its entry
// point died) is not lost but waits for the master's end to be reaped, whatever the order.
std::function<bool(const launch::RankPlacement&, int)> lose_worker_hosts(const JobSpec& spec,
                                                                         const LocalCluster& cluster, HostsRun& ran,
                                                                         JobStatusFile& status) {
  return [&spec, &cluster, &ran, &status](const launch::RankPlacement& p, int wait_status) {
    const std::vector<LocalHost>& hosts = cluster.hosts();
    if (p.host == hosts.front().name) return false;
    const auto host = std::find_if(hosts.begin(), hosts.end(), [&](const LocalHost& h) { return h.name == p.host; });
    std::string reason = host == hosts.end() ? "" : read_if_exists(ContainerLayout(host->root).failure_file());
    if (reason.find(master_closed_link(hosts.front().name)) != std::string::npos) {
      ran.master_gone.push_back(p.host);
      return true;
    }
    if (reason.empty()) reason = describe_host_end(p.host, wait_status);
    ran.lost[p.host] = reason;
    status.host_lost(p.host, reason);
    std::fprintf(stderr, "dtrain job %s: %s lost (%s); the job goes on without it\n", spec.name.c_str(), p.host.c_str(),
                 reason.c_str());
    std::fflush(stderr);
    return true;
  };
}

// Host-tagged output into the recorder, exit codes and the first failure into `ran`.
launch::SupervisorOptions supervision_options(const JobSpec& spec, const RunOptions& options, JobRecorder& recorder,
                                              HostsRun& ran, JobStatusFile& status) {
  launch::SupervisorOptions supervision;
  supervision.start_timeout_s = 0;
  supervision.kill_grace_s = options.kill_grace_s;
  supervision.time_limit_s = spec.max_run_seconds;
  supervision.prefix = [](const launch::RankPlacement& p, std::string_view) { return fmt::format("[{}] ", p.host); };
  supervision.line_sink = [&recorder](const launch::RankPlacement& p, bool is_stderr, std::string_view line) {
    recorder.line(p.host, fmt::format("[{}] ", p.host), is_stderr, line);
  };
  supervision.on_exit = [&ran, &status](const launch::RankPlacement& p, int wait_status) {
    ran.host_exit[p.host] = launch::exit_code_of(wait_status);
    ran.ended.push_back(p.host);
    status.host_ended(p.host, wait_status);
  };
  supervision.on_failure = [&ran](const launch::WorkerFailure& f) { ran.failure = f; };
  return supervision;
}

// Runs the entry points under the launcher's supervisor, with the Pipe feeders running.
HostsRun run_hosts(const JobSpec& spec, const RunOptions& options, LocalCluster& cluster, const StagedHosts& staged,
                   JobRecorder& recorder, JobStatusFile& status, const JobOutputs& outputs,
                   launch::SignalChannel& signals) {
  HostsRun ran;
  std::vector<launch::WorkerLaunch> launches = entrypoint_launches(spec, options, cluster, outputs.ranks_file);
  launch::SupervisorOptions supervision = supervision_options(spec, options, recorder, ran, status);
  if (spec.elastic) supervision.tolerate_failure = lose_worker_hosts(spec, cluster, ran, status);
  const auto& feeders = staged.feeders;
  status.hosts_started(staged);
  for (auto& f : feeders) f->start();
  auto started = Clock::now();
  launch::JobSupervisor supervisor(supervision, signals);
  ran.supervisor_code = supervisor.run(std::move(launches));
  ran.seconds = seconds_since(started);
  for (auto& f : feeders) f->stop();
  ran.left_behind = cluster.kill_remaining_processes();
  if (ran.left_behind > 0) spdlog::warn("killed {} process(es) left in the job's hosts", ran.left_behind);
  return ran;
}

// ---- the outcome ----

// The host whose entry point failed first, or nullptr when no host failed first (the job
// completed, ran past max_run_seconds, or the runner was stopped). Its failure is the job's:
// the supervisor stopped every other host then, so their ends are consequences (a master
// stopped by SIGTERM would otherwise take the blame for a worker cut off from it).
const LocalHost* first_failed_host(const std::vector<LocalHost>& hosts, const HostsRun& ran) {
  if (!ran.failure || ran.failure->placement.rank < 0) return nullptr;
  for (const auto& h : hosts) {
    if (h.name == ran.failure->placement.host) return &h;
  }
  return nullptr;
}

// The hosts the supervisor stopped because `failed` failed: those still running when it
// ended. A host that ended with status 0 afterwards had done its part already (a worker told
// the end by the master), so it is not counted. In an elastic job, the worker hosts that ended
// because the master's entry point did count too, even where the supervisor reaped them first.
std::vector<std::string> hosts_stopped_by(const std::vector<LocalHost>& hosts, const HostsRun& ran,
                                          const std::string& failed) {
  const auto failed_at = std::find(ran.ended.begin(), ran.ended.end(), failed);
  std::vector<std::string> stopped;
  for (const auto& h : hosts) {
    if (h.name == failed) continue;
    const auto ended_at = std::find(ran.ended.begin(), ran.ended.end(), h.name);
    const bool ended_before = ended_at < failed_at;  // not ended at all compares as after
    const bool completed = ended_at != ran.ended.end() && ran.host_exit.at(h.name) == 0;
    const bool master_gone = failed == hosts.front().name &&
                             std::find(ran.master_gone.begin(), ran.master_gone.end(), h.name) != ran.master_gone.end();
    if ((!ended_before && !completed) || master_gone) stopped.push_back(h.name);
  }
  return stopped;
}

// How a host's entry point ended, for a host that left no failure file (killed outright).
std::string describe_host_end(const std::string& host, int status) {
  if (WIFSIGNALED(status)) {
    return fmt::format("{}: its entry point was killed by signal {} ({})", host, WTERMSIG(status),
                       launch::signal_name(WTERMSIG(status)));
  }
  return fmt::format("{}: its entry point exited with status {}", host, WEXITSTATUS(status));
}

std::string describe_host_end(const std::string& host, const launch::WorkerFailure& failure) {
  if (!failure.wait_status) return failure.description;  // it never ran
  return describe_host_end(host, *failure.wait_status);
}

// The first failure as the failed host recorded it (its output/failure), else how it ended.
std::string first_failure_reason(const LocalHost& failed, const launch::WorkerFailure& failure) {
  std::string reason = read_if_exists(ContainerLayout(failed.root).failure_file());
  return reason.empty() ? describe_host_end(failed.name, failure) : reason;
}

// The master's exit code decides (judge_outcome puts the first failed host's first); when it
// is 0, any other host's failure (but a lost host's, in an elastic job), a host that never
// ended or a failed supervision still fails the job.
int job_exit_code(const std::vector<LocalHost>& hosts, const HostsRun& ran) {
  const auto master = ran.host_exit.find(hosts.front().name);
  const int master_code = master != ran.host_exit.end() ? master->second : 1;
  if (master_code != 0) return master_code;
  for (const auto& [name, code] : ran.host_exit) {
    if (code != 0 && !ran.lost.contains(name)) return code;
  }
  return ran.host_exit.size() < hosts.size() || ran.supervisor_code != 0 ? 1 : 0;
}

// When no host failed first: the master's failure file, else the supervisor's description,
// else any host's file.
std::string failure_reason(const std::vector<LocalHost>& hosts, const HostsRun& ran, int code) {
  std::string reason = read_if_exists(ContainerLayout(hosts.front().root).failure_file());
  if (reason.empty() && ran.failure) reason = ran.failure->description;
  if (reason.empty()) {
    for (const auto& h : hosts) {
      reason = read_if_exists(ContainerLayout(h.root).failure_file());
      if (!reason.empty()) break;
    }
  }
  if (reason.empty()) reason = fmt::format("the job failed with status {}", code);
  return reason;
}

JobOutcome judge_outcome(const JobSpec& spec, const std::vector<LocalHost>& hosts, const HostsRun& ran) {
  JobOutcome outcome;
  outcome.code = job_exit_code(hosts, ran);
  outcome.lost_hosts = ran.lost;
  const bool timed_out =
      ran.failure && ran.failure->placement.rank < 0 && ran.failure->description.starts_with("time limit");
  if (timed_out) {
    outcome.reason = fmt::format("MaxRuntimeExceeded: the job ran longer than max_run_seconds ({} s) and was stopped",
                                 launch::format_env_number(spec.max_run_seconds));
    if (outcome.code == 0) outcome.code = 1;
  } else if (const LocalHost* failed = first_failed_host(hosts, ran)) {
    // Without elastic mode the first failure is the job's, as SageMaker reports it.
    outcome.reason = first_failure_reason(*failed, *ran.failure);
    if (auto code = ran.host_exit.find(failed->name); code != ran.host_exit.end()) outcome.code = code->second;
    outcome.failed_host = failed->name;
    outcome.stopped_hosts = hosts_stopped_by(hosts, ran, failed->name);
  } else if (outcome.code != 0) {
    outcome.reason = failure_reason(hosts, ran, outcome.code);
  }
  if (ran.supervisor_code > 128 && !ran.failure) {
    outcome.reason = fmt::format("Stopped: the job runner caught {}", launch::signal_name(ran.supervisor_code - 128));
    outcome.code = ran.supervisor_code;
    outcome.stopped = true;
  }
  return outcome;
}

}  // namespace

int run_job(const JobSpec& spec, const RunOptions& options) {
  if (options.hosts == HostKind::kNetns && !can_create_netns()) {
    throw JobError::usage("--hosts netns needs root (it creates network namespaces); use --hosts process");
  }
  // The spec does not check its channel sources (a rendered job needs none here); a local run
  // stages them from this machine, so they must be here.
  if (auto missing = missing_channel_sources(spec); !missing.empty()) {
    throw JobError::usage(fmt::format("{}", fmt::join(missing, "; ")));
  }
  JobOutputs outputs(spec);
  outputs.reset();
  std::string work_dir = options.work_dir.value_or(default_work_dir(spec.name));
  std::error_code ec;
  fs::remove_all(work_dir + "/hosts", ec);

  // Before any thread exists, so the feeders' threads inherit the mask.
  launch::SignalChannel signals;
  auto job_started = Clock::now();

  LocalCluster cluster(options.hosts, work_dir, spec.instance_count);
  const std::vector<LocalHost>& hosts = cluster.hosts();
  std::vector<std::string> host_names;
  for (const auto& h : hosts) host_names.push_back(h.name);
  JobStatusFile status(spec, outputs.status_file, to_string(options.hosts), host_names);
  announce_job(spec, options);
  StagedHosts staged = stage_hosts(spec, hosts, cluster.network_interface());
  JobRecorder recorder(spec, outputs, host_names);
  const HostsRun ran = run_hosts(spec, options, cluster, staged, recorder, status, outputs, signals);
  const JobOutcome outcome = judge_outcome(spec, hosts, ran);
  const Artifacts artifacts = collect_artifacts(spec, outputs, hosts);
  JobResults results{
      to_string(options.hosts), staged, ran.host_exit, outcome, artifacts, recorder, ran.seconds, job_started,
      ran.left_behind};
  write_summary(spec, outputs, hosts, results);
  status.finished(outcome.status(), outcome.code == 0 ? "" : limit_failure_reason(outcome.reason));

  cluster.teardown();
  if (!options.keep_work_dir) fs::remove_all(work_dir, ec);
  report_end(spec, outcome, ran.seconds, outputs);
  return outcome.code;
}

}  // namespace dtrain::job
