// status.json in a job's output directory: what a job is doing while it runs, for the
// dashboard and anyone who looks (summary.json is written only at the end). Rewritten whole,
// through a temporary file and a rename, at every change (staging done, a host ended or was
// lost, the end), so a reader never sees half a file.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "job/host_staging.h"
#include "job/job_spec.h"

namespace dtrain::job {

class JobStatusFile {
 public:
  // Writes the first status ("Starting": hosts being staged); `backend`: process, netns, slurm.
  JobStatusFile(const JobSpec& spec, std::string path, const std::string& backend,
                const std::vector<std::string>& host_names);

  // The channels are staged and the entry points start: status Running, hosts running.
  void hosts_started(const StagedHosts& staged);
  // A host's entry point ended with this wait status.
  void host_ended(const std::string& host, int wait_status);
  // An elastic job went on without this host.
  void host_lost(const std::string& host, const std::string& reason);
  // The job's end: Completed, Failed or Stopped.
  void finished(const std::string& status, const std::string& failure_reason);

 private:
  struct HostState {
    std::string state = "starting";  // starting, running, exited, failed, lost
    std::optional<int> exit_code, signal;
    std::string reason;
    std::vector<nlohmann::ordered_json> staging;
  };
  void write() const;

  std::string path_;
  nlohmann::ordered_json job_;  // the fields that do not change
  std::string status_ = "Starting";
  std::string failure_reason_;
  std::vector<std::string> host_order_;
  std::map<std::string, HostState> hosts_;
};

}  // namespace dtrain::job
