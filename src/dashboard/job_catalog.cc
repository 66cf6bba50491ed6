#include "dashboard/job_catalog.h"

#include <algorithm>
#include <filesystem>
#include <map>

namespace dtrain::dashboard {
namespace {

namespace fs = std::filesystem;

bool looks_like_job(const fs::path& dir) {
  std::error_code ec;
  for (const char* marker : {"status.json", "summary.json", "metrics.jsonl"}) {
    if (fs::is_regular_file(dir / marker, ec)) return true;
  }
  return fs::is_directory(dir / "logs", ec);
}

}  // namespace

std::vector<JobLocation> find_jobs(const std::vector<std::string>& roots) {
  std::vector<JobLocation> jobs;
  std::map<std::string, int> seen;
  for (const auto& root : roots) {
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
      // A link to a directory elsewhere is not followed: what is served stays under the roots.
      if (it->is_symlink(ec) || !it->is_directory(ec)) continue;
      if (looks_like_job(it->path())) names.push_back(it->path().filename().string());
    }
    std::sort(names.begin(), names.end());
    for (const auto& name : names) {
      const int count = ++seen[name];
      jobs.push_back({count == 1 ? name : name + "~" + std::to_string(count), root + "/" + name});
    }
  }
  return jobs;
}

std::optional<JobLocation> find_job(const std::vector<std::string>& roots, const std::string& id) {
  for (auto& job : find_jobs(roots)) {
    if (job.id == id) return job;
  }
  return std::nullopt;
}

}  // namespace dtrain::dashboard
