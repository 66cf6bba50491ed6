// What srun prints, read by a launcher that waits for it: the tasks' lines under --label
// ("3: text", padded when there are ten or more tasks) get the launcher's own prefixes, and
// srun's reports ("srun: error: node2: task 3: Killed", "... tasks 0-1: Exited with exit code
// 2") name the first task that failed: the one whose failure ended the step.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/rank_assignment.h"

namespace dtrain::launch {

class SrunOutput {
 public:
  // placements: where each rank runs; tag_with_host: "[host:rank]<stream>:" prefixes.
  SrunOutput(std::vector<RankPlacement> placements, bool tag_with_host);

  // One newline-terminated line of srun's stdout or stderr, as the launcher relays it.
  std::string relay(std::string_view line, bool is_stderr);

  // The first failed rank srun reported, if any.
  std::optional<RankPlacement> failed_rank() const;
  // The failed rank's wait status as waitpid() would give it (exit code or signal).
  std::optional<int> failed_wait_status() const;

  // One line on how the step ended, for srun's wait status when it was not a success:
  // "rank 2 (host node2) was killed by signal 9 (SIGKILL); srun exited with status 143",
  // "rank 1 (host node1) exited with status 3; ...", or srun's first error.
  std::string describe_failure(int srun_wait_status) const;

 private:
  void read_srun_line(std::string_view text);

  std::vector<RankPlacement> placements_;
  bool tag_with_host_;
  std::optional<int> failed_rank_;
  std::string failed_host_;
  std::optional<int> failed_signal_;
  std::optional<int> failed_exit_code_;
  std::string first_error_;  // srun's first "srun: error: ..." that named no task
};

}  // namespace dtrain::launch
