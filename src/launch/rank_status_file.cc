#include "launch/rank_status_file.h"

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

namespace dtrain::launch {
namespace {

using Json = nlohmann::ordered_json;

Json optional_int(const std::optional<int>& v) { return v ? Json(*v) : Json(nullptr); }

}  // namespace

RankStatusFile::RankStatusFile(std::string path) : path_(std::move(path)) { write(); }

void RankStatusFile::started(const RankPlacement& placement, pid_t pid) {
  Rank& r = ranks_[placement.rank];
  r = Rank{};
  r.placement = placement;
  r.pid = pid;
  write();
}

void RankStatusFile::reached_rendezvous(int rank) {
  auto it = ranks_.find(rank);
  if (it == ranks_.end() || it->second.ready) return;
  it->second.ready = true;
  write();
}

void RankStatusFile::ended(const RankPlacement& placement, int wait_status) {
  auto it = ranks_.find(placement.rank);
  if (it == ranks_.end() || it->second.pid == 0) return;  // a service, not a rank
  Rank& r = it->second;
  if (WIFSIGNALED(wait_status)) {
    r.signal = WTERMSIG(wait_status);
    r.state = "killed";
  } else {
    r.exit_code = WEXITSTATUS(wait_status);
    r.state = *r.exit_code == 0 ? "exited" : "failed";
  }
  write();
}

// For watching only: a file that cannot be written is a warning, never the job's failure.
void RankStatusFile::write() const {
  Json ranks = Json::array();
  for (const auto& [rank, r] : ranks_) {
    ranks.push_back({{"rank", rank},
                     {"host", r.placement.host},
                     {"local_rank", r.placement.local_rank},
                     {"pid", r.pid},
                     {"state", r.state},
                     {"reached_rendezvous", r.ready},
                     {"exit_code", optional_int(r.exit_code)},
                     {"signal", optional_int(r.signal)}});
  }
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string temporary = path_ + ".tmp";
  std::ofstream out(temporary, std::ios::trunc);
  out << Json{{"updated_at", now}, {"ranks", ranks}}.dump(2) << "\n";
  out.close();
  std::error_code ec;
  if (out) std::filesystem::rename(temporary, path_, ec);
  if (!out || ec) spdlog::warn("cannot write the rank status file {}", path_);
}

}  // namespace dtrain::launch
