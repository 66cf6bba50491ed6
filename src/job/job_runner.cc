#include "job/job_runner.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "job/artifact_packer.h"
#include "job/channel_stager.h"
#include "job/container_layout.h"
#include "job/entrypoint.h"
#include "job/job_error.h"
#include "launch/job_supervisor.h"
#include "launch/local_spawner.h"
#include "launch/signal_channel.h"
#include "launch/worker_env.h"
#include "job/metric_extractor.h"
#include "job/pipe_feeder.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double unix_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void write_all(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n <= 0) return;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

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

std::string read_if_exists(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return "";
  try {
    return read_text_file(path);
  } catch (...) {
    return "";
  }
}

// The job's output directory: artifacts, logs, metrics and summary.
struct JobOutputs {
  explicit JobOutputs(const JobSpec& spec)
      : dir(spec.output_path + "/" + spec.name),
        logs_dir(dir + "/logs"),
        metrics_file(dir + "/metrics.jsonl"),
        summary_file(dir + "/summary.json"),
        model_archive(dir + "/model.tar.gz"),
        output_archive(dir + "/output.tar.gz") {}

  void reset() const {
    std::error_code ec;
    for (const auto& f : {metrics_file, summary_file, model_archive, output_archive}) fs::remove(f, ec);
    fs::remove_all(logs_dir, ec);
    fs::create_directories(logs_dir, ec);
    if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", logs_dir, ec.message()));
  }

  std::string dir, logs_dir, metrics_file, summary_file, model_archive, output_archive;
};

// Everything the relay learns while the hosts run.
class JobRecorder {
 public:
  JobRecorder(const JobSpec& spec, const JobOutputs& outputs, const std::vector<LocalHost>& hosts)
      : extractor_(spec.metric_definitions), metrics_(outputs.metrics_file, std::ios::app) {
    for (const auto& h : hosts) {
      logs_[h.name] = std::make_unique<std::ofstream>(outputs.logs_dir + "/" + h.name + ".log");
    }
  }

  void line(const std::string& host, std::string_view prefix, bool is_stderr,
            std::string_view prefixed) {
    write_all(is_stderr ? 2 : 1, prefixed);
    std::string_view text = prefixed.substr(std::min(prefix.size(), prefixed.size()));
    if (auto it = logs_.find(host); it != logs_.end()) {
      it->second->write(text.data(), static_cast<std::streamsize>(text.size()));
      it->second->flush();
    }
    if (extractor_.empty()) return;
    TaggedLine tagged = parse_tagged_line(text, host);
    for (const auto& sample : extractor_.extract(tagged.text, tagged.host, tagged.rank, unix_time())) {
      metrics_ << sample.to_json().dump() << '\n';
      metrics_.flush();
      final_[sample.name] = sample.value;
      ++samples_;
    }
  }

  const std::map<std::string, double>& final_metrics() const { return final_; }
  size_t samples() const { return samples_; }

 private:
  MetricExtractor extractor_;
  std::ofstream metrics_;
  std::map<std::string, std::unique_ptr<std::ofstream>> logs_;
  std::map<std::string, double> final_;
  size_t samples_ = 0;
};

void announce_job(const JobSpec& spec, const RunOptions& options) {
  std::printf("dtrain job %s: %d host%s (%s) x %d process%s\n", spec.name.c_str(), spec.instance_count,
              spec.instance_count == 1 ? "" : "s", to_string(options.hosts).c_str(), spec.processes_per_host,
              spec.processes_per_host == 1 ? "" : "es");
  std::fflush(stdout);
}

// ---- staging ----

// What staging left on the hosts.
struct StagedHosts {
  std::vector<ChannelStaging> staging;               // one report per channel and host
  std::vector<std::unique_ptr<PipeFeeder>> feeders;  // the Pipe-mode channels' feeders, not started
  double seconds = 0;
};

std::vector<std::string> sorted_names(const std::vector<LocalHost>& hosts) {
  std::vector<std::string> names;
  for (const auto& h : hosts) names.push_back(h.name);
  std::sort(names.begin(), names.end());
  return names;
}

// The host's /opt/ml/input/config files, as the platform writes them.
void write_host_config(const JobSpec& spec, const LocalCluster& cluster, const std::vector<std::string>& names,
                       const LocalHost& host, const ContainerLayout& layout) {
  ContainerConfig config;
  config.hyperparameters_file = hyperparameters_file_for(spec);
  config.resource.current_host = host.name;
  config.resource.current_instance_type = spec.instance_type;
  config.resource.hosts = names;
  config.resource.network_interface_name = cluster.network_interface();
  config.input_data_config = input_data_config_for(spec);
  write_container_config(layout, config);
}

// The host's checkpoint directory, with what an earlier run synced (checkpoint.sync_to).
void restore_checkpoints(const JobSpec& spec, const ContainerLayout& layout) {
  std::error_code ec;
  std::string checkpoints = layout.container_path(spec.checkpoint.local_path);
  fs::create_directories(checkpoints, ec);
  if (spec.checkpoint.sync_to && fs::is_directory(*spec.checkpoint.sync_to, ec)) {
    copy_tree(*spec.checkpoint.sync_to, checkpoints);
  }
}

// Each host's /opt/ml, checkpoints restored, channels staged.
StagedHosts stage_hosts(const JobSpec& spec, const LocalCluster& cluster) {
  StagedHosts staged;
  auto started = Clock::now();
  const std::vector<LocalHost>& hosts = cluster.hosts();
  const std::vector<std::string> names = sorted_names(hosts);
  const int count = static_cast<int>(hosts.size());
  for (int index = 0; index < count; ++index) {
    const LocalHost& host = hosts[static_cast<size_t>(index)];
    ContainerLayout layout(host.root);
    write_host_config(spec, cluster, names, host, layout);
    restore_checkpoints(spec, layout);
    for (const auto& channel : spec.channels) {
      ChannelStaging report = stage_channel(channel, layout, host.name, index, count);
      std::printf("%s\n", report.describe().c_str());
      staged.staging.push_back(report);
      if (channel.input_mode == InputMode::kPipe) {
        staged.feeders.push_back(std::make_unique<PipeFeeder>(layout.input_data_dir(), channel.name,
                                                              pipe_files_for_host(channel, index, count)));
      }
    }
  }
  staged.seconds = seconds_since(started);
  std::fflush(stdout);
  return staged;
}

// ---- running the hosts ----

// Every host runs the entry point; the master launches the ranks on all.
std::vector<launch::WorkerLaunch> entrypoint_launches(const JobSpec& spec, const RunOptions& options,
                                                      const LocalCluster& cluster) {
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
        {"SAGEMAKER_BASE_DIR", host.root},
        {"DTRAIN_HOSTS_FILE", cluster.hosts_file()},
        {"DTRAIN_HOST_PORT", std::to_string(port)},
        {"DTRAIN_LAUNCH_AGENT", agent},
        {"TRAINING_JOB_NAME", spec.name},
    };
    for (const auto& kv : spec.environment) env.push_back(kv);
    l.request.env = launch::merge_environment(parent_env, env);
    launches.push_back(std::move(l));
  }
  return launches;
}

// What the supervisor saw while the hosts ran.
struct HostsRun {
  std::map<std::string, int> host_exit;  // exit code by host name, for the hosts that ended
  std::optional<launch::WorkerFailure> failure;
  int supervisor_code = 0;
  double seconds = 0;
  int left_behind = 0;  // processes killed in the hosts after the supervisor returned
};

// Host-tagged output into the recorder, exit codes and the first failure into `ran`.
launch::SupervisorOptions supervision_options(const JobSpec& spec, const RunOptions& options, JobRecorder& recorder,
                                              HostsRun& ran) {
  launch::SupervisorOptions supervision;
  supervision.start_timeout_s = 0;
  supervision.kill_grace_s = options.kill_grace_s;
  supervision.time_limit_s = spec.max_run_seconds;
  supervision.prefix = [](const launch::RankPlacement& p, std::string_view) {
    return fmt::format("[{}] ", p.host);
  };
  supervision.line_sink = [&recorder](const launch::RankPlacement& p, bool is_stderr, std::string_view line) {
    recorder.line(p.host, fmt::format("[{}] ", p.host), is_stderr, line);
  };
  supervision.on_exit = [&ran](const launch::RankPlacement& p, int status) {
    ran.host_exit[p.host] = launch::exit_code_of(status);
  };
  supervision.on_failure = [&ran](const launch::WorkerFailure& f) { ran.failure = f; };
  return supervision;
}

// Runs the entry points under the launcher's supervisor, with the Pipe feeders running.
HostsRun run_hosts(const JobSpec& spec, const RunOptions& options, LocalCluster& cluster,
                   const std::vector<std::unique_ptr<PipeFeeder>>& feeders, JobRecorder& recorder,
                   launch::SignalChannel& signals) {
  HostsRun ran;
  std::vector<launch::WorkerLaunch> launches = entrypoint_launches(spec, options, cluster);
  launch::SupervisorOptions supervision = supervision_options(spec, options, recorder, ran);
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

struct JobOutcome {
  int code = 0;        // the job's exit code
  std::string reason;  // empty when the job completed
};

// The master's exit code decides; when it is 0, any other host's failure, a host that never
// ended or a failed supervision still fails the job.
int job_exit_code(const std::vector<LocalHost>& hosts, const HostsRun& ran) {
  const auto master = ran.host_exit.find(hosts.front().name);
  const int master_code = master != ran.host_exit.end() ? master->second : 1;
  if (master_code != 0) return master_code;
  for (const auto& [name, code] : ran.host_exit) {
    if (code != 0) return code;
  }
  return ran.host_exit.size() < hosts.size() || ran.supervisor_code != 0 ? 1 : 0;
}

// The master's failure file, else the supervisor's description, else any host's file.
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
  JobOutcome outcome{job_exit_code(hosts, ran), ""};
  const bool timed_out =
      ran.failure && ran.failure->placement.rank < 0 && ran.failure->description.starts_with("time limit");
  if (timed_out) {
    outcome.reason = fmt::format("MaxRuntimeExceeded: the job ran longer than max_run_seconds ({} s) and was stopped",
                                 launch::format_env_number(spec.max_run_seconds));
    if (outcome.code == 0) outcome.code = 1;
  } else if (outcome.code != 0) {
    outcome.reason = failure_reason(hosts, ran, outcome.code);
  }
  if (ran.supervisor_code > 128 && !ran.failure) {
    outcome.reason = fmt::format("Stopped: the job runner caught {}", launch::signal_name(ran.supervisor_code - 128));
    outcome.code = ran.supervisor_code;
  }
  return outcome;
}

// ---- artifacts and summary ----

struct Artifacts {
  Json paths = Json::object();  // the summary's "artifacts"
  std::string error;            // why packing stopped, if it did
};

// model.tar.gz and output.tar.gz from the master; every host's checkpoints synced.
Artifacts collect_artifacts(const JobSpec& spec, const JobOutputs& outputs, const std::vector<LocalHost>& hosts) {
  Artifacts artifacts;
  ContainerLayout master_layout(hosts.front().root);
  try {
    pack_directory(master_layout.model_dir(), outputs.model_archive);
    artifacts.paths["model"] = outputs.model_archive;
    pack_directory(master_layout.output_data_dir(), outputs.output_archive);
    artifacts.paths["output"] = outputs.output_archive;
    if (spec.checkpoint.sync_to) {
      // Every host's checkpoints into one place, the master's last so its files win.
      for (auto it = hosts.rbegin(); it != hosts.rend(); ++it) {
        copy_tree(ContainerLayout(it->root).container_path(spec.checkpoint.local_path), *spec.checkpoint.sync_to);
      }
      artifacts.paths["checkpoints"] = *spec.checkpoint.sync_to;
    }
  } catch (const std::exception& e) {
    artifacts.error = e.what();
    spdlog::error("packing artifacts: {}", artifacts.error);
  }
  artifacts.paths["logs"] = outputs.logs_dir;
  artifacts.paths["metrics"] = outputs.metrics_file;
  return artifacts;
}

// Everything the summary reports, gathered as the job went.
struct JobResults {
  const StagedHosts& staged;
  const HostsRun& ran;
  const JobOutcome& outcome;
  const Artifacts& artifacts;
  const JobRecorder& recorder;
  Clock::time_point started;
};

Json host_summaries(const std::vector<LocalHost>& hosts, const JobResults& results) {
  Json host_list = Json::array();
  for (const auto& h : hosts) {
    Json entry;
    entry["name"] = h.name;
    entry["address"] = h.address;
    const auto exit = results.ran.host_exit.find(h.name);
    entry["exit_code"] = exit != results.ran.host_exit.end() ? Json(exit->second) : Json(nullptr);
    std::string host_failure = read_if_exists(ContainerLayout(h.root).failure_file());
    entry["failure"] = host_failure.empty() ? Json(nullptr) : Json(host_failure);
    Json channels = Json::array();
    for (const auto& s : results.staged.staging) {
      if (s.host == h.name) channels.push_back(s.to_json());
    }
    entry["staging"] = channels;
    host_list.push_back(entry);
  }
  return host_list;
}

Json pipe_summaries(const std::vector<std::unique_ptr<PipeFeeder>>& feeders) {
  Json pipes = Json::array();
  for (const auto& f : feeders) {
    pipes.push_back({{"channel", f->channel()},
                     {"epochs_completed", f->epochs_completed()},
                     {"bytes_written", f->bytes_written()}});
  }
  return pipes;
}

// output_path/<name>/summary.json.
void write_summary(const JobSpec& spec, const RunOptions& options, const JobOutputs& outputs,
                   const std::vector<LocalHost>& hosts, const JobResults& results) {
  const JobOutcome& outcome = results.outcome;
  Json summary;
  summary["job_name"] = spec.name;
  summary["status"] = outcome.code == 0 ? "Completed" : "Failed";
  summary["failure_reason"] = outcome.code == 0 ? Json(nullptr) : Json(limit_failure_reason(outcome.reason));
  summary["exit_code"] = outcome.code;
  summary["hosts_backend"] = to_string(options.hosts);
  summary["instance_count"] = spec.instance_count;
  summary["processes_per_host"] = spec.processes_per_host;
  summary["hosts"] = host_summaries(hosts, results);
  Json final_metrics = Json::object();
  for (const auto& [name, value] : results.recorder.final_metrics()) final_metrics[name] = value;
  summary["final_metrics"] = final_metrics;
  summary["metric_samples"] = results.recorder.samples();
  if (Json pipes = pipe_summaries(results.staged.feeders); !pipes.empty()) summary["pipe_channels"] = pipes;
  summary["staging_seconds"] = results.staged.seconds;
  summary["run_seconds"] = results.ran.seconds;
  summary["total_seconds"] = seconds_since(results.started);
  summary["processes_left_behind"] = results.ran.left_behind;
  summary["artifacts"] = results.artifacts.paths;
  if (!results.artifacts.error.empty()) summary["artifact_error"] = results.artifacts.error;
  write_text_file(outputs.summary_file, summary.dump(2) + "\n");
}

void report_end(const JobSpec& spec, const JobOutcome& outcome, double run_seconds, const JobOutputs& outputs) {
  if (outcome.code == 0) {
    std::printf("dtrain job %s: Completed in %.1f s; artifacts in %s\n", spec.name.c_str(), run_seconds,
                outputs.dir.c_str());
  } else {
    std::fprintf(stderr, "dtrain job %s: Failed (exit %d): %s\n", spec.name.c_str(), outcome.code,
                 limit_failure_reason(outcome.reason).c_str());
  }
  std::fflush(stdout);
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
  announce_job(spec, options);
  StagedHosts staged = stage_hosts(spec, cluster);
  JobRecorder recorder(spec, outputs, hosts);
  const HostsRun ran = run_hosts(spec, options, cluster, staged.feeders, recorder, signals);
  const JobOutcome outcome = judge_outcome(spec, hosts, ran);
  const Artifacts artifacts = collect_artifacts(spec, outputs, hosts);
  write_summary(spec, options, outputs, hosts, {staged, ran, outcome, artifacts, recorder, job_started});

  cluster.teardown();
  if (!options.keep_work_dir) fs::remove_all(work_dir, ec);
  report_end(spec, outcome, ran.seconds, outputs);
  return outcome.code;
}

}  // namespace dtrain::job
