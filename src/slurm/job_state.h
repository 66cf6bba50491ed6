// A Slurm job's state as `scontrol show job -o ID` prints it ("JobId=7 ... JobState=RUNNING
// Reason=None ... ExitCode=0:0 ..."), for a submitter that follows its job to the end.
#pragma once

#include <string>
#include <string_view>

#include "slurm/slurm_error.h"

namespace dtrain::slurm {

struct JobState {
  std::string state;    // PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...
  std::string reason;   // Reason=, "None" when there is none
  int exit_code = 0;    // ExitCode=<code>:<signal>: the batch script's exit code
  int exit_signal = 0;  // ... and the signal that ended it

  // The job will not run again: every state but PENDING, CONFIGURING, RUNNING, COMPLETING,
  // SUSPENDED, REQUEUED and RESIZING (and their variants).
  bool ended() const;
};

// Throws SlurmError naming the text when JobState= is missing.
JobState parse_job_state(std::string_view scontrol_line);

}  // namespace dtrain::slurm
