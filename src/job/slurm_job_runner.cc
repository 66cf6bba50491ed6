#include "job/slurm_job_runner.h"

#include <poll.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "job/container_layout.h"
#include "job/entrypoint.h"
#include "job/host_staging.h"
#include "job/job_error.h"
#include "job/job_outputs.h"
#include "job/job_report.h"
#include "job/job_status.h"
#include "job/sbatch_script.h"
#include "job/slurm_host.h"
#include "job/system_command.h"
#include "launch/mpirun_command.h"
#include "launch/signal_channel.h"
#include "slurm/job_state.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The lines appended to a file since the last call (the batch script's output, which Slurm
// writes on the shared file system while the job runs).
class FileTail {
 public:
  explicit FileTail(std::string path) : path_(std::move(path)) {}

  std::vector<std::string> new_lines() {
    std::vector<std::string> lines;
    std::ifstream in(path_, std::ios::binary);
    if (!in) return lines;
    in.seekg(static_cast<std::streamoff>(offset_));
    std::string chunk((std::istreambuf_iterator<char>(in)), {});
    offset_ += chunk.size();
    pending_ += chunk;
    for (size_t end; (end = pending_.find('\n')) != std::string::npos;) {
      lines.push_back(pending_.substr(0, end + 1));
      pending_.erase(0, end + 1);
    }
    return lines;
  }

  // What is left without a newline once the file will not grow any more.
  std::string rest() { return std::exchange(pending_, ""); }

 private:
  std::string path_;
  size_t offset_ = 0;
  std::string pending_;
};

// "0: text" from the hosts' step (srun --label, one task per node): host algo-1's line.
void relay_line(JobRecorder& recorder, const std::string& line) {
  static const std::regex kHostLabel(R"(^ *([0-9]+): )");
  std::smatch label;
  if (std::regex_search(line, label, kHostLabel)) {
    const std::string host = fmt::format("algo-{}", std::stoi(label[1]) + 1);
    const std::string prefix = fmt::format("[{}] ", host);
    recorder.line(host, prefix, false, prefix + line.substr(static_cast<size_t>(label.length(0))));
  } else {
    recorder.line("slurm", "[slurm] ", true, "[slurm] " + line);
  }
}

std::string submit(const std::string& script, const SlurmRunOptions& options) {
  std::vector<std::string> argv = {"sbatch", "--parsable"};
  for (const auto& word : launch::split_arguments(options.sbatch_args)) argv.push_back(word);
  argv.push_back(script);
  CommandResult r = run_command(argv, 120);
  if (r.exit_code == -1)
    throw JobError::runtime("cannot execute sbatch (install slurm-client, or run on a login node)");
  std::string out = r.output;
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  std::smatch id;
  // --parsable prints "<id>" or "<id>;<cluster>" as its last line.
  if (!r.ok() || !std::regex_search(out, id, std::regex(R"(([0-9]+)(;\S+)?$)"))) {
    throw JobError::runtime(fmt::format("sbatch refused the job: {}", out));
  }
  return id[1];
}

// The job's state now; UNKNOWN once Slurm has forgotten it (MinJobAge past its end).
slurm::JobState query_state(const std::string& job_id) {
  CommandResult r = run_command({"scontrol", "show", "job", "-o", job_id}, 30);
  if (r.exit_code == -1) {
    throw JobError::runtime(
        fmt::format("cannot execute scontrol to follow Slurm job {} (install slurm-client)", job_id));
  }
  if (!r.ok()) {
    if (r.output.find("Invalid job id") != std::string::npos) return {"UNKNOWN", "", 0, 0};
    spdlog::warn("scontrol show job {}: {}", job_id, r.output);
    return {"RUNNING", "", 0, 0};  // ask again at the next poll
  }
  try {
    return slurm::parse_job_state(r.output);
  } catch (const slurm::SlurmError& e) {
    spdlog::warn("{}", e.what());
    return {"RUNNING", "", 0, 0};
  }
}

// Relays the job's output until Slurm says it ended. A SIGINT, SIGTERM or SIGHUP here
// cancels the job and keeps following until it has ended; a second one stops following.
struct Followed {
  slurm::JobState state;
  std::string cancelled_by;  // the signal that made this process cancel the job, if any
  double seconds = 0;
};

Followed follow(const std::string& job_id, FileTail& log, JobRecorder& recorder, launch::SignalChannel& signals) {
  Followed followed;
  const auto started = Clock::now();
  while (true) {
    for (const auto& line : log.new_lines()) relay_line(recorder, line);
    followed.state = query_state(job_id);
    if (followed.state.ended()) break;
    pollfd fd{signals.fd(), POLLIN, 0};
    if (::poll(&fd, 1, 500) > 0) {
      for (int sig : signals.drain()) {
        if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP) continue;
        if (!followed.cancelled_by.empty()) {
          throw JobError::runtime(
              fmt::format("{} again: stopped following Slurm job {}, which was cancelled and "
                          "may still be ending (squeue -j {})",
                          launch::signal_name(sig), job_id, job_id));
        }
        followed.cancelled_by = launch::signal_name(sig);
        std::fprintf(stderr, "dtrain job: %s: cancelling Slurm job %s\n", followed.cancelled_by.c_str(),
                     job_id.c_str());
        run_command({"scancel", job_id}, 60);
      }
    }
  }
  // Slurm writes the last lines as the job ends; read what is there.
  for (const auto& line : log.new_lines()) relay_line(recorder, line);
  if (std::string rest = log.rest(); !rest.empty()) relay_line(recorder, rest + "\n");
  followed.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  return followed;
}

JobOutcome judge(const JobSpec& spec, const std::vector<LocalHost>& hosts, const Followed& followed) {
  const slurm::JobState& state = followed.state;
  JobOutcome outcome;
  const bool master_succeeded = fs::exists(ContainerLayout(hosts.front().root).success_file());
  if (state.state == "CANCELLED") {
    outcome.stopped = true;
    outcome.code = 128 + SIGTERM;
    outcome.reason =
        followed.cancelled_by.empty()
            ? "Stopped: the Slurm job was cancelled (scancel)"
            : fmt::format("Stopped: dtrain job run caught {} and cancelled the Slurm job", followed.cancelled_by);
    return outcome;
  }
  if (state.state == "TIMEOUT" || state.state == "DEADLINE") {
    outcome.code = 1;
    outcome.reason = fmt::format(
        "MaxRuntimeExceeded: the job ran longer than max_run_seconds ({} s, Slurm time "
        "limit {}) and was stopped",
        launch::format_env_number(spec.max_run_seconds), slurm_time_limit(spec.max_run_seconds));
    return outcome;
  }
  if (state.state == "COMPLETED" && master_succeeded) return outcome;
  outcome.code = state.exit_code != 0 ? state.exit_code : 1;
  outcome.reason = read_if_exists(ContainerLayout(hosts.front().root).failure_file());
  for (size_t i = 1; outcome.reason.empty() && i < hosts.size(); ++i) {
    outcome.reason = read_if_exists(ContainerLayout(hosts[i].root).failure_file());
  }
  if (outcome.reason.empty()) {
    outcome.reason = fmt::format("the Slurm job ended in state {} (exit code {}:{}, reason {})", state.state,
                                 state.exit_code, state.exit_signal, state.reason);
  }
  return outcome;
}

}  // namespace

int run_slurm_job(const JobSpec& spec, const SlurmRunOptions& options) {
  check_runs_on_slurm(spec);
  if (auto missing = missing_channel_sources(spec); !missing.empty()) {
    throw JobError::usage(fmt::format("{}", fmt::join(missing, "; ")));
  }
  JobOutputs outputs(spec);
  outputs.reset();
  const std::string work_dir = options.work_dir.value_or(outputs.dir + "/slurm-work");
  std::error_code ec;
  fs::remove_all(work_dir, ec);
  fs::create_directories(work_dir, ec);
  if (ec) throw JobError::runtime(fmt::format("cannot create {}: {}", work_dir, ec.message()));

  // Before any thread exists (none here yet), so SIGINT/SIGTERM arrive on the channel.
  launch::SignalChannel signals;
  const auto job_started = Clock::now();
  std::vector<LocalHost> hosts;
  for (int i = 0; i < spec.instance_count; ++i) {
    LocalHost host;
    host.name = fmt::format("algo-{}", i + 1);
    host.root = slurm_host_root(work_dir + "/hosts", i);
    hosts.push_back(host);
  }
  std::vector<std::string> host_names;
  for (const auto& h : hosts) host_names.push_back(h.name);
  JobStatusFile status(spec, outputs.status_file, "slurm", host_names);
  std::printf("dtrain job %s: %d host%s (slurm) x %d process%s\n", spec.name.c_str(), spec.instance_count,
              spec.instance_count == 1 ? "" : "s", spec.processes_per_host, spec.processes_per_host == 1 ? "" : "es");
  std::fflush(stdout);
  StagedHosts staged = stage_hosts(spec, hosts, options.network_interface);

  SbatchOptions sbatch;
  sbatch.dtrain_exe = options.dtrain_exe;
  sbatch.hosts_dir = work_dir + "/hosts";
  sbatch.log_file = work_dir + "/slurm.log";
  sbatch.partition = options.partition;
  const std::string script = work_dir + "/job.sbatch";
  write_text_file(script, render_sbatch_script(spec, sbatch));
  const std::string job_id = submit(script, options);
  std::printf("dtrain job %s: submitted as Slurm job %s (script %s)\n", spec.name.c_str(), job_id.c_str(),
              script.c_str());
  std::fflush(stdout);
  status.hosts_started(staged);  // submitted: Slurm runs them when it can

  std::vector<std::string> log_names = host_names;
  log_names.push_back("slurm");
  JobRecorder recorder(spec, outputs, log_names);
  FileTail log(sbatch.log_file);
  const Followed followed = follow(job_id, log, recorder, signals);
  const JobOutcome outcome = judge(spec, hosts, followed);
  const Artifacts artifacts = collect_artifacts(spec, outputs, hosts);
  JobResults results{"slurm", staged, {}, outcome, artifacts, recorder, followed.seconds, job_started};
  if (fs::exists(ContainerLayout(hosts.front().root).success_file()) ||
      fs::exists(ContainerLayout(hosts.front().root).failure_file())) {
    results.host_exit[hosts.front().name] = followed.state.exit_code;
  }
  results.extra["slurm_job_id"] = job_id;
  results.extra["slurm_state"] = followed.state.state;
  write_summary(spec, outputs, hosts, results);
  status.finished(outcome.status(), outcome.code == 0 ? "" : limit_failure_reason(outcome.reason));
  if (!options.keep_work_dir) fs::remove_all(work_dir, ec);
  report_end(spec, outcome, followed.seconds, outputs);
  return outcome.code;
}

}  // namespace dtrain::job
