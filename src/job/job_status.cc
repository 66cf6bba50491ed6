#include "job/job_status.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "job/container_layout.h"

namespace dtrain::job {
namespace {

using Json = nlohmann::ordered_json;

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

Json optional_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

JobStatusFile::JobStatusFile(const JobSpec& spec, std::string path, const std::string& backend,
                             const std::vector<std::string>& host_names)
    : path_(std::move(path)), host_order_(host_names) {
  job_["job_name"] = spec.name;
  job_["started_at"] = unix_now();
  // A reader on this machine tells a runner that died without writing summary.json by these.
  job_["runner_pid"] = static_cast<int>(::getpid());
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  job_["runner_host"] = host;
  job_["hosts_backend"] = backend;
  job_["engine"] = to_string(spec.engine);
  job_["instance_count"] = spec.instance_count;
  job_["processes_per_host"] = spec.processes_per_host;
  Json metric_names = Json::array();
  for (const auto& m : spec.metric_definitions) metric_names.push_back(m.name);
  job_["metric_names"] = metric_names;
  job_["checkpoint_sync_to"] = spec.checkpoint.sync_to ? Json(*spec.checkpoint.sync_to) : Json(nullptr);
  for (const auto& name : host_names) hosts_[name] = HostState{};
  write();
}

void JobStatusFile::hosts_started(const StagedHosts& staged) {
  status_ = "Running";
  for (auto& [name, host] : hosts_) host.state = "running";
  for (const auto& s : staged.staging) {
    if (auto it = hosts_.find(s.host); it != hosts_.end()) it->second.staging.push_back(s.to_json());
  }
  write();
}

void JobStatusFile::host_ended(const std::string& host, int wait_status) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return;
  HostState& h = it->second;
  if (WIFSIGNALED(wait_status)) {
    h.signal = WTERMSIG(wait_status);
    h.exit_code = 128 + WTERMSIG(wait_status);
  } else {
    h.exit_code = WEXITSTATUS(wait_status);
  }
  if (h.state != "lost") h.state = h.exit_code == 0 ? "exited" : "failed";
  write();
}

void JobStatusFile::host_lost(const std::string& host, const std::string& reason) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) return;
  it->second.state = "lost";
  it->second.reason = reason;
  write();
}

void JobStatusFile::finished(const std::string& status, const std::string& failure_reason) {
  status_ = status;
  failure_reason_ = failure_reason;
  write();
}

// A status that cannot be written is a warning, not the job's failure: it is for watching.
void JobStatusFile::write() const {
  Json status = job_;
  status["status"] = status_;
  status["failure_reason"] = failure_reason_.empty() ? Json(nullptr) : Json(failure_reason_);
  status["updated_at"] = unix_now();
  Json hosts = Json::array();
  for (const auto& name : host_order_) {
    const HostState& h = hosts_.at(name);
    hosts.push_back({{"name", name},
                     {"state", h.state},
                     {"exit_code", optional_int(h.exit_code)},
                     {"signal", optional_int(h.signal)},
                     {"reason", h.reason.empty() ? Json(nullptr) : Json(h.reason)},
                     {"staging", h.staging}});
  }
  status["hosts"] = hosts;
  const std::string temporary = path_ + ".tmp";
  try {
    write_text_file(temporary, status.dump(2) + "\n");
    std::filesystem::rename(temporary, path_);
  } catch (const std::exception& e) {
    spdlog::warn("cannot write the job's status file {}: {}", path_, e.what());
  }
}

}  // namespace dtrain::job
