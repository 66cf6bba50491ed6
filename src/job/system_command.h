#pragma once

#include <string>
#include <vector>

namespace dtrain::job {

// The outcome of a short helper program (ip, tar).
struct CommandResult {
  int exit_code = -1;  // 128+signal when killed; -1 when it could not start
  std::string output;  // stdout and stderr together
  bool ok() const { return exit_code == 0; }
};

// Runs `argv` to completion (killed after `timeout_s`) with this process's
// environment, collecting its output.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s = 60);

// Like run_command, but throws JobError (runtime) naming the command and its
// output when it fails.
std::string run_command_or_throw(const std::vector<std::string>& argv, double timeout_s = 60);

}  // namespace dtrain::job
