#include "dashboard/job_view.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "dashboard/file_chunk.h"

namespace dtrain::dashboard {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

constexpr uint64_t kMetricChunkBytes = 4 << 20;
constexpr uint64_t kLogChunkBytes = 256 << 10;
constexpr uint64_t kLastValuesBytes = 64 << 10;

double unix_now() { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); }

// A JSON object from a file, or null when it is missing, partial or not an object.
Json read_object(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  std::stringstream text;
  text << in.rdbuf();
  Json parsed = Json::parse(text.str(), nullptr, false);
  return parsed.is_object() ? parsed : Json(nullptr);
}

Json field(const Json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? Json(nullptr) : *it;
}

// The first non-null of a field in the summary, then the status.
Json either(const Json& summary, const Json& status, const char* key) {
  Json v = field(summary, key);
  return v.is_null() ? field(status, key) : v;
}

std::string this_host() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return host;
}

// A runner that wrote "Running" on this machine and is no longer alive ended without a summary.
bool runner_gone(const Json& status) {
  const Json pid = field(status, "runner_pid");
  const Json host = field(status, "runner_host");
  if (!pid.is_number_integer() || !host.is_string() || host.get<std::string>() != this_host()) return false;
  return ::kill(pid.get<int>(), 0) != 0 && errno == ESRCH;
}

struct JobFiles {
  Json summary, status, ranks;  // ranks.json: the master's launcher's view of each rank
};

JobFiles read_job_files(const JobLocation& job) {
  return {read_object(job.dir + "/summary.json"), read_object(job.dir + "/status.json"),
          read_object(job.dir + "/ranks.json")};
}

// Each metric's last value, from the end of metrics.jsonl (a running job has no summary yet).
Json last_metric_values(const std::string& metrics_file) {
  Json values = Json::object();
  const FileChunk chunk = read_complete_lines(metrics_file, std::nullopt, kLastValuesBytes);
  std::istringstream lines(chunk.text);
  for (std::string line; std::getline(lines, line);) {
    Json sample = Json::parse(line, nullptr, false);
    if (sample.is_object() && sample.contains("name") && sample["name"].is_string() && sample.contains("value") &&
        sample["value"].is_number()) {
      values[sample["name"].get<std::string>()] = sample["value"];
    }
  }
  return values;
}

Json summary_row(const JobLocation& job, const JobFiles& files) {
  const Json& summary = files.summary;
  const Json& status = files.status;
  Json row;
  row["id"] = job.id;
  Json name = either(summary, status, "job_name");
  row["name"] = name.is_string() ? name : Json(fs::path(job.dir).filename().string());
  row["dir"] = job.dir;
  std::string state = "Unknown";
  Json reason = nullptr;
  if (field(summary, "status").is_string()) {
    state = summary["status"];
    reason = field(summary, "failure_reason");
  } else if (field(status, "status").is_string()) {
    state = status["status"];
    reason = field(status, "failure_reason");
    if ((state == "Running" || state == "Starting") && runner_gone(status)) {
      state = "Interrupted";
      reason = "the job runner (pid " + field(status, "runner_pid").dump() + ") ended without writing summary.json";
    }
  }
  row["status"] = state;
  row["failure_reason"] = reason;
  row["instance_count"] = either(summary, status, "instance_count");
  row["processes_per_host"] = either(summary, status, "processes_per_host");
  row["engine"] = either(summary, status, "engine");
  row["backend"] = either(summary, status, "hosts_backend");
  const Json started = either(summary, status, "started_at");
  row["started_at"] = started;
  Json duration = field(summary, "total_seconds");
  if (duration.is_null() && started.is_number()) {
    const Json updated = field(status, "updated_at");
    const bool live = state == "Running" || state == "Starting";
    const double end = live ? unix_now() : updated.is_number() ? updated.get<double>() : started.get<double>();
    duration = std::max(0.0, end - started.get<double>());
  }
  row["duration_s"] = duration;
  Json final_metrics = field(summary, "final_metrics");
  row["final_metrics"] = final_metrics.is_object() ? final_metrics : last_metric_values(job.dir + "/metrics.jsonl");
  return row;
}

// "running", "exited", ... for a summary's host entry (a status.json's entries say it themselves).
std::string host_state_from_summary(const Json& host) {
  if (!field(host, "lost").is_null()) return "lost";
  if (!field(host, "stopped_because").is_null()) return "stopped";
  const Json code = field(host, "exit_code");
  if (!code.is_number_integer()) return "unknown";
  return code.get<int>() == 0 ? "exited" : "failed";
}

// A host's ranks: as the master's launcher recorded them (ranks.json), else laid out host by
// host (algo-1 has ranks 0..P-1) with the host's state. A rank the launcher last saw running in
// a job that is over ended with its host (the launcher was stopped before it could say).
Json rank_entries(const JobFiles& files, const std::string& host, int host_index, int processes_per_host,
                  const Json& host_entry, bool job_running) {
  Json ranks = Json::array();
  const Json recorded = field(files.ranks, "ranks");
  if (recorded.is_array()) {
    for (const auto& r : recorded) {
      if (field(r, "host") != host || !field(r, "rank").is_number_integer()) continue;
      Json rank = {{"rank", r["rank"]},
                   {"local_rank", field(r, "local_rank")},
                   {"state", field(r, "state")},
                   {"exit_code", field(r, "exit_code")},
                   {"signal", field(r, "signal")},
                   {"pid", field(r, "pid")},
                   {"reached_rendezvous", field(r, "reached_rendezvous")}};
      if (!job_running && rank["state"] == "running") {
        for (const char* key : {"state", "exit_code", "signal"}) rank[key] = host_entry[key];
      }
      ranks.push_back(rank);
    }
    if (!ranks.empty()) return ranks;
  }
  for (int local = 0; local < processes_per_host; ++local) {
    ranks.push_back({{"rank", host_index * processes_per_host + local},
                     {"local_rank", local},
                     {"state", host_entry["state"]},
                     {"exit_code", host_entry["exit_code"]},
                     {"signal", host_entry["signal"]}});
  }
  return ranks;
}

Json host_entries(const JobFiles& files, int processes_per_host, bool job_running) {
  const Json status_hosts = field(files.status, "hosts");
  const Json summary_hosts = field(files.summary, "hosts");
  std::map<std::string, Json> summary_by_name;
  if (summary_hosts.is_array()) {
    for (const auto& h : summary_hosts) {
      if (field(h, "name").is_string()) summary_by_name[h["name"].get<std::string>()] = h;
    }
  }
  const Json& listed = status_hosts.is_array() ? status_hosts : summary_hosts;
  Json hosts = Json::array();
  if (!listed.is_array()) return hosts;
  int index = 0;
  for (const auto& h : listed) {
    if (!field(h, "name").is_string()) continue;
    const std::string name = h["name"];
    const Json from_summary = summary_by_name.count(name) ? summary_by_name[name] : Json(nullptr);
    Json entry;
    entry["name"] = name;
    std::string state = field(h, "state").is_string() ? h["state"].get<std::string>() : host_state_from_summary(h);
    if (!from_summary.is_null() && state != "lost") {
      const std::string ended = host_state_from_summary(from_summary);
      if (ended != "unknown") state = ended;
    }
    entry["state"] = state;
    Json code = field(h, "exit_code");
    if (code.is_null()) code = field(from_summary, "exit_code");
    Json signal = field(h, "signal");
    if (signal.is_null() && code.is_number_integer() && code.get<int>() > 128) signal = code.get<int>() - 128;
    entry["exit_code"] = code;
    entry["signal"] = signal;
    Json reason = field(h, "reason");
    for (const char* key : {"lost", "stopped_because", "failure"}) {
      if (reason.is_null()) reason = field(from_summary, key);
    }
    entry["reason"] = reason;
    entry["ranks"] = rank_entries(files, name, index, processes_per_host, entry, job_running);
    Json staging = field(from_summary, "staging");
    if (!staging.is_array()) staging = field(h, "staging");
    entry["staging"] = staging.is_array() ? staging : Json::array();
    hosts.push_back(entry);
    ++index;
  }
  return hosts;
}

// Regular files of the job directory (links and what is under them left out), a few levels down.
void list_files(const fs::path& root, const fs::path& dir, int depth, Json& out) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) entries.push_back(*it);
  std::sort(entries.begin(), entries.end(),
            [](const fs::directory_entry& a, const fs::directory_entry& b) { return a.path() < b.path(); });
  for (const auto& entry : entries) {
    if (out.size() >= 500) return;
    if (entry.is_symlink(ec)) continue;
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec)) {
      if (depth > 0) list_files(root, entry.path(), depth - 1, out);
    } else if (entry.is_regular_file(ec) && !name.ends_with(".tmp")) {
      out.push_back(
          {{"name", name}, {"path", fs::relative(entry.path(), root, ec).string()}, {"bytes", entry.file_size(ec)}});
    }
  }
}

}  // namespace

Json job_summary(const JobLocation& job) { return summary_row(job, read_job_files(job)); }

Json job_detail(const JobLocation& job) {
  const JobFiles files = read_job_files(job);
  Json detail = summary_row(job, files);
  const Json per_host = detail["processes_per_host"];
  const bool running = detail["status"] == "Running" || detail["status"] == "Starting";
  detail["hosts"] = host_entries(files, per_host.is_number_integer() ? per_host.get<int>() : 1, running);
  Json artifacts = Json::array();
  list_files(job.dir, job.dir, 2, artifacts);
  detail["artifacts"] = artifacts;
  Json tensorboard = field(field(files.summary, "artifacts"), "checkpoints");
  if (tensorboard.is_null()) tensorboard = field(files.status, "checkpoint_sync_to");
  detail["tensorboard_dir"] = tensorboard;
  Json timelines = Json::array();
  Json log_hosts = Json::array();
  for (const auto& a : artifacts) {
    const std::string path = a["path"];
    const std::string name = a["name"];
    if (path == name && name.find("timeline") != std::string::npos && name.ends_with(".json"))
      timelines.push_back(name);
    if (path == "logs/" + name && name.ends_with(".log")) log_hosts.push_back(name.substr(0, name.size() - 4));
  }
  detail["timelines"] = timelines;
  detail["log_hosts"] = log_hosts;
  Json names = field(files.status, "metric_names");
  if (!names.is_array()) {
    names = Json::array();
    for (const auto& [name, value] : detail["final_metrics"].items()) names.push_back(name);
  }
  detail["metric_names"] = names;
  return detail;
}

// The time of the first sample that has one: the origin of a job whose start is unknown.
double first_sample_time(const std::string& metrics_file) {
  const FileChunk head = read_complete_lines(metrics_file, 0, kLastValuesBytes);
  std::istringstream lines(head.text);
  for (std::string line; std::getline(lines, line);) {
    Json sample = Json::parse(line, nullptr, false);
    if (field(sample, "time").is_number()) return sample["time"].get<double>();
  }
  return 0.0;
}

Json metric_samples(const JobLocation& job, uint64_t from) {
  const JobFiles files = read_job_files(job);
  const Json started = either(files.summary, files.status, "started_at");
  const std::string metrics_file = job.dir + "/metrics.jsonl";
  const double origin = started.is_number() ? started.get<double>() : first_sample_time(metrics_file);
  const FileChunk chunk = read_complete_lines(metrics_file, from, kMetricChunkBytes);
  Json samples = Json::array();
  size_t skipped = 0;
  std::istringstream lines(chunk.text);
  for (std::string line; std::getline(lines, line);) {
    Json s = Json::parse(line, nullptr, false);
    if (!s.is_object() || !field(s, "name").is_string() || !field(s, "value").is_number() ||
        !field(s, "time").is_number()) {
      ++skipped;
      continue;
    }
    samples.push_back({{"time", s["time"].get<double>() - origin},
                       {"host", field(s, "host")},
                       {"rank", field(s, "rank")},
                       {"name", s["name"]},
                       {"value", s["value"]}});
  }
  return {
      {"samples", samples}, {"next", chunk.next}, {"size", chunk.size}, {"skipped", skipped}, {"started_at", started}};
}

Json log_lines(const JobLocation& job, const std::string& host, std::optional<uint64_t> from) {
  const FileChunk chunk = read_complete_lines(job.dir + "/logs/" + host + ".log", from, kLogChunkBytes);
  return {{"host", host}, {"text", chunk.text}, {"next", chunk.next}, {"size", chunk.size}};
}

}  // namespace dtrain::dashboard
