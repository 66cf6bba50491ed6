// `dtrain run --host-discovery-script S`: the hosts an elastic job may use, as the script
// prints them now (Horovod's format: one "host" or "host:slots" per line; blank lines and
// '#' comments skipped). The script runs through /bin/sh from the launcher's directory and
// must answer quickly: the launcher waits for it.
#pragma once

#include <string>
#include <vector>

#include "launch/host_spec.h"

namespace dtrain::launch {

// Runs the script; throws LaunchError naming it when it cannot run, exits non-zero, or
// prints a line that is not a host.
std::vector<HostSlots> discover_hosts(const std::string& script);

// The parsing alone (for tests): `origin` names the script in messages.
std::vector<HostSlots> parse_discovered_hosts(const std::string& output, const std::string& origin);

}  // namespace dtrain::launch
