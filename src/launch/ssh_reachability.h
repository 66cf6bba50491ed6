#pragma once

#include <string>
#include <vector>

#include "launch/ssh_command.h"

namespace dtrain::launch {

// Runs `ssh -o BatchMode=yes -o ConnectTimeout=5 ... host true` for every
// host, at most `max_parallel` at a time, before any worker starts. The first
// host (in the given order) that fails is reported as a LaunchError
// (runtime) naming the host and carrying ssh's own last line of stderr.
void require_ssh_reachable(const std::vector<std::string>& hosts, const SshOptions& options, int max_parallel = 16,
                           double timeout_s = 20);

}  // namespace dtrain::launch
