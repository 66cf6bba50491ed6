// `--rank-status-file PATH`: each rank's state as the launcher sees it (running with its pid,
// whether it reached rendezvous, how it ended), rewritten whole through a temporary file and
// a rename at every change. The job runner points the master's launcher at the job's
// directory (ranks.json), where the dashboard reads it.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "launch/rank_assignment.h"

namespace dtrain::launch {

class RankStatusFile {
 public:
  explicit RankStatusFile(std::string path);

  void started(const RankPlacement& placement, pid_t pid);
  void reached_rendezvous(int rank);
  void ended(const RankPlacement& placement, int wait_status);

 private:
  struct Rank {
    RankPlacement placement;
    pid_t pid = 0;
    bool ready = false;
    std::string state = "running";  // running, exited, failed, killed
    std::optional<int> exit_code, signal;
  };
  void write() const;

  std::string path_;
  std::map<int, Rank> ranks_;  // by rank (an elastic job's worker number)
};

}  // namespace dtrain::launch
