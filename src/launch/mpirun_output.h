// What mpirun prints, read by a launcher that waits for it: the ranks' lines under
// --tag-output ("[1,3]<stdout>:text") get the launcher's own prefixes, and mpirun's reports
// ("mpirun noticed that process rank 1 ... exited on signal 9", "Process name: [[j,1],1]
// Exit code: 3", any other message box) become one line naming what failed.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launch/rank_assignment.h"

namespace dtrain::launch {

class MpirunOutput {
 public:
  // placements: where each rank runs (mpirun maps by slot, as assign_ranks does);
  // tag_with_host: prefixes "[host:rank]<stream>:" instead of "[rank]<stream>:".
  MpirunOutput(std::vector<RankPlacement> placements, bool tag_with_host);

  // One newline-terminated line of mpirun's stdout or stderr, as the launcher relays it:
  // a rank's line with the launcher's prefix, mpirun's own lines unchanged (and read for
  // failures).
  std::string relay(std::string_view line);

  // The rank mpirun reported as the first to fail, if it named one.
  std::optional<RankPlacement> failed_rank() const;

  // One line on how the job ended, for mpirun's wait status when it was not a success:
  // "rank 1 (host algo-2) was killed by signal 9 (SIGKILL); mpirun exited with status 137",
  // "rank 2 (host algo-3) exited with status 3", or mpirun's first message.
  std::string describe_failure(int mpirun_wait_status) const;

 private:
  void read_mpirun_line(std::string_view text);
  std::string host_of(int rank) const;

  std::vector<RankPlacement> placements_;
  bool tag_with_host_;
  // What mpirun said about the first failed rank.
  std::optional<int> failed_rank_;
  std::optional<std::string> failed_host_;
  std::optional<int> failed_signal_;
  std::optional<int> failed_exit_code_;
  bool expecting_exit_code_ = false;
  // mpirun's first message box (lines between dashed rules) and its first line outside
  // any box, each joined into one line.
  std::string box_message_;
  std::string loose_message_;
  bool box_done_ = false;
  bool inside_box_ = false;
};

}  // namespace dtrain::launch
