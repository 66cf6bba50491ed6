// The jobs a dashboard shows: the subdirectories of the --jobs directories that a job runner
// wrote (status.json, summary.json, metrics.jsonl or logs/). Found anew at every request, so
// a job started after the dashboard appears without a restart.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace dtrain::dashboard {

struct JobLocation {
  std::string id;   // the directory's name; "name~2" for the second of two roots holding the same name
  std::string dir;  // absolute path
};

// Every job under `roots`, in the roots' order, each root's jobs by name.
std::vector<JobLocation> find_jobs(const std::vector<std::string>& roots);

std::optional<JobLocation> find_job(const std::vector<std::string>& roots, const std::string& id);

}  // namespace dtrain::dashboard
