// How a job ended, written down: the artifacts packed from the master host (model.tar.gz,
// output.tar.gz, checkpoints synced), summary.json and the closing line. Shared by the local
// runner and the Slurm runner, which differ in how they learn the outcome.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "job/host_staging.h"
#include "job/job_outputs.h"
#include "job/job_spec.h"
#include "job/local_cluster.h"

namespace dtrain::job {

struct JobOutcome {
  int code = 0;          // the job's exit code
  std::string reason;    // empty when the job completed
  bool stopped = false;  // ended from outside (a signal to the runner, scancel): status Stopped
  // When a host failed first (the local runner knows): that host, whose failure is the reason,
  // and the hosts stopped because of it.
  std::string failed_host;
  std::vector<std::string> stopped_hosts;
  // Elastic jobs: the worker hosts lost while the job went on, and why (their failure).
  std::map<std::string, std::string> lost_hosts;

  std::string status() const { return code == 0 ? "Completed" : stopped ? "Stopped" : "Failed"; }
  // "algo-3 failed" for a host stopped because of the first failure, else "".
  std::string why_stopped(const std::string& host) const;
};

// The text of `path`, or "" when it is missing or unreadable (a host's failure file).
std::string read_if_exists(const std::string& path);

struct Artifacts {
  nlohmann::ordered_json paths = nlohmann::ordered_json::object();  // the summary's "artifacts"
  std::string error;                                                // why packing stopped, if it did
};

// model.tar.gz and output.tar.gz from the master (the first host); every host's checkpoints synced.
Artifacts collect_artifacts(const JobSpec& spec, const JobOutputs& outputs, const std::vector<LocalHost>& hosts);

// Everything the summary reports, gathered as the job went.
struct JobResults {
  std::string backend;  // process, netns, slurm
  const StagedHosts& staged;
  std::map<std::string, int> host_exit;  // exit code by host name, for the hosts whose end is known
  const JobOutcome& outcome;
  const Artifacts& artifacts;
  const JobRecorder& recorder;
  double run_seconds = 0;
  std::chrono::steady_clock::time_point started;
  int left_behind = 0;                                              // processes killed in the hosts after the job
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // backend-specific fields
};

// output_path/<name>/summary.json.
void write_summary(const JobSpec& spec, const JobOutputs& outputs, const std::vector<LocalHost>& hosts,
                   const JobResults& results);

// "dtrain job NAME: Completed in ..." on stdout, or the status and reason on stderr (after a
// line naming the hosts stopped because another failed, if any).
void report_end(const JobSpec& spec, const JobOutcome& outcome, double run_seconds, const JobOutputs& outputs);

}  // namespace dtrain::job
