#pragma once

#include "launch/launch_options.h"

namespace dtrain::launch {

// `dtrain run`: places ranks on hosts, starts the rendezvous store, starts
// every worker (locally or over ssh) and supervises them to the end.
// Returns the exit code (0, 1 after a worker failure, 128+signal when
// interrupted). Throws LaunchError for bad options (usage) and for failures
// before any worker started (runtime), e.g. an unreachable host.
int launch_job(const LaunchOptions& options);

}  // namespace dtrain::launch
