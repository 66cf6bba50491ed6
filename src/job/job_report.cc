#include "job/job_report.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "job/artifact_packer.h"
#include "job/container_layout.h"
#include "job/entrypoint.h"

namespace dtrain::job {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

Json host_summaries(const JobSpec& spec, const std::vector<LocalHost>& hosts, const JobResults& results) {
  Json host_list = Json::array();
  for (const auto& h : hosts) {
    Json entry;
    entry["name"] = h.name;
    entry["address"] = h.address;
    const auto exit = results.host_exit.find(h.name);
    entry["exit_code"] = exit != results.host_exit.end() ? Json(exit->second) : Json(nullptr);
    std::string host_failure = read_if_exists(ContainerLayout(h.root).failure_file());
    entry["failure"] = host_failure.empty() ? Json(nullptr) : Json(host_failure);
    // A stopped host's own failure (stopped by SIGTERM) is a consequence, not the job's reason.
    const std::string why_stopped = results.outcome.why_stopped(h.name);
    entry["stopped_because"] = why_stopped.empty() ? Json(nullptr) : Json(why_stopped);
    if (spec.elastic) {
      // A lost host's failure did not end the job: the others went on without it.
      const auto lost = results.outcome.lost_hosts.find(h.name);
      entry["lost"] = lost != results.outcome.lost_hosts.end() ? Json(lost->second) : Json(nullptr);
    }
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

}  // namespace

std::string JobOutcome::why_stopped(const std::string& host) const {
  const bool stopped_host = std::find(stopped_hosts.begin(), stopped_hosts.end(), host) != stopped_hosts.end();
  return stopped_host ? failed_host + " failed" : "";
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

void write_summary(const JobSpec& spec, const JobOutputs& outputs, const std::vector<LocalHost>& hosts,
                   const JobResults& results) {
  const JobOutcome& outcome = results.outcome;
  Json summary;
  summary["job_name"] = spec.name;
  summary["status"] = outcome.status();
  summary["failure_reason"] = outcome.code == 0 ? Json(nullptr) : Json(limit_failure_reason(outcome.reason));
  summary["exit_code"] = outcome.code;
  summary["hosts_backend"] = results.backend;
  summary["engine"] = to_string(spec.engine);
  summary["instance_count"] = spec.instance_count;
  summary["processes_per_host"] = spec.processes_per_host;
  if (spec.elastic) {
    summary["elastic"] = {{"min_hosts", spec.elastic->min_hosts},
                          {"max_hosts", spec.elastic->max_hosts},
                          {"timeout_s", spec.elastic->timeout_s},
                          {"host_cooldown_s", spec.elastic->host_cooldown_s},
                          {"reset_limit", spec.elastic->reset_limit}};
  }
  for (const auto& [key, value] : results.extra.items()) summary[key] = value;
  summary["hosts"] = host_summaries(spec, hosts, results);
  Json final_metrics = Json::object();
  for (const auto& [name, value] : results.recorder.final_metrics()) final_metrics[name] = value;
  summary["final_metrics"] = final_metrics;
  summary["metric_samples"] = results.recorder.samples();
  if (Json pipes = pipe_summaries(results.staged.feeders); !pipes.empty()) summary["pipe_channels"] = pipes;
  summary["staging_seconds"] = results.staged.seconds;
  summary["run_seconds"] = results.run_seconds;
  const double total_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - results.started).count();
  summary["total_seconds"] = total_seconds;
  summary["started_at"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count() - total_seconds;
  summary["processes_left_behind"] = results.left_behind;
  summary["artifacts"] = results.artifacts.paths;
  if (!results.artifacts.error.empty()) summary["artifact_error"] = results.artifacts.error;
  write_text_file(outputs.summary_file, summary.dump(2) + "\n");
}

void report_end(const JobSpec& spec, const JobOutcome& outcome, double run_seconds, const JobOutputs& outputs) {
  if (outcome.code == 0) {
    std::printf("dtrain job %s: Completed in %.1f s; artifacts in %s\n", spec.name.c_str(), run_seconds,
                outputs.dir.c_str());
  } else {
    if (!outcome.stopped_hosts.empty()) {
      std::fprintf(stderr, "dtrain job %s: %s stopped because %s failed\n", spec.name.c_str(),
                   fmt::format("{}", fmt::join(outcome.stopped_hosts, ", ")).c_str(), outcome.failed_host.c_str());
    }
    std::fprintf(stderr, "dtrain job %s: %s (exit %d): %s\n", spec.name.c_str(), outcome.status().c_str(), outcome.code,
                 limit_failure_reason(outcome.reason).c_str());
  }
  std::fflush(stdout);
}

}  // namespace dtrain::job
